package tasks

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Registry maps task kinds (the task_type column) to factories. The zero
// value is ready to use. Engines and tests that want isolation make their
// own; the package-level functions use a default one.
type Registry struct {
	mu        sync.RWMutex
	factories map[string]Factory
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry { return &Registry{} }

// Register adds a kind. It fails on an empty kind, a nil factory or a kind
// already registered: a silent replacement would run the wrong code.
func (r *Registry) Register(kind string, f Factory) error {
	if strings.TrimSpace(kind) == "" {
		return errors.New("tasks: register: empty kind")
	}
	if f == nil {
		return fmt.Errorf("tasks: register %q: nil factory", kind)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.factories[kind]; ok {
		return fmt.Errorf("tasks: register %q: kind already registered", kind)
	}
	if r.factories == nil {
		r.factories = make(map[string]Factory)
	}
	r.factories[kind] = f
	return nil
}

// MustRegister is Register for program wiring, where a failure is a bug.
func (r *Registry) MustRegister(kind string, f Factory) {
	if err := r.Register(kind, f); err != nil {
		panic(err)
	}
}

// New returns a fresh Task of kind. An unknown kind yields an error wrapping
// ErrUnknownTask that lists the registered kinds, since the usual cause is a
// typo in task_type or a forgotten registration.
func (r *Registry) New(kind string) (Task, error) {
	r.mu.RLock()
	f, ok := r.factories[kind]
	r.mu.RUnlock()
	if !ok {
		kinds := r.Kinds()
		list := "none"
		if len(kinds) > 0 {
			list = strings.Join(kinds, ", ")
		}
		return nil, fmt.Errorf("%w %q (registered: %s)", ErrUnknownTask, kind, list)
	}
	t := f()
	if t == nil {
		return nil, fmt.Errorf("tasks: factory for %q returned nil", kind)
	}
	return t, nil
}

// Kinds returns the registered kinds, sorted.
func (r *Registry) Kinds() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	kinds := make([]string, 0, len(r.factories))
	for k := range r.factories {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	return kinds
}

// Validate checks params for kind without running anything: the kind must
// be registered, and a task implementing Validator must accept the params.
func (r *Registry) Validate(kind string, params json.RawMessage) error {
	t, err := r.New(kind)
	if err != nil {
		return err
	}
	if v, ok := t.(Validator); ok {
		return v.Validate(params)
	}
	return nil
}

var defaultRegistry = NewRegistry()

// Default returns the registry the package-level functions use.
func Default() *Registry { return defaultRegistry }

// Register adds a kind to the default registry.
func Register(kind string, f Factory) error { return defaultRegistry.Register(kind, f) }

// MustRegister adds a kind to the default registry and panics on error.
func MustRegister(kind string, f Factory) { defaultRegistry.MustRegister(kind, f) }

// New returns a fresh Task of kind from the default registry.
func New(kind string) (Task, error) { return defaultRegistry.New(kind) }

// Kinds lists the default registry's kinds, sorted.
func Kinds() []string { return defaultRegistry.Kinds() }

// Validate checks params for kind against the default registry.
func Validate(kind string, params json.RawMessage) error {
	return defaultRegistry.Validate(kind, params)
}
