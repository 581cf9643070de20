package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"

	"github.com/chimesched/chime/api"
	"github.com/chimesched/chime/internal/startstop"
)

// service is what a node needs of each of its parts: startstop's Start
// and Stop, Stop harmless before Start and safe twice.
type service interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// named is a service with the name its errors carry.
type named struct {
	name string
	service
}

// stage is services whose order among themselves does not matter: they
// start side by side once the stage before has started, and stop side by
// side before the stage before stops.
type stage []named

// services starts a node's stages in order and stops them in reverse.
type services struct {
	stages []stage
}

// start starts the stages one after another and returns at the first
// failure; stop then stops them all.
func (s *services) start(ctx context.Context) error {
	for _, st := range s.stages {
		if err := st.each(func(sv service) error { return sv.Start(ctx) }); err != nil {
			return err
		}
	}
	return nil
}

// stop stops every stage, the last first, within ctx (a service never
// started stops at once), and joins their errors: a service that fails to
// stop does not keep the others running.
func (s *services) stop(ctx context.Context) error {
	var errs []error
	for _, st := range slices.Backward(s.stages) {
		errs = append(errs, st.each(func(sv service) error { return sv.Stop(ctx) }))
	}
	return errors.Join(errs...)
}

// each calls fn on every service of the stage side by side, and joins
// their errors, each named.
func (st stage) each(fn func(service) error) error {
	errs := make([]error, len(st))
	var wg sync.WaitGroup
	for i, sv := range st {
		wg.Go(func() {
			if err := fn(sv.service); err != nil {
				errs[i] = fmt.Errorf("%s: %w", sv.name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// loop is a service of one goroutine, run until Stop (or its ctx ends).
type loop struct {
	startstop.Base
	run func(ctx context.Context)
}

func (l *loop) Start(ctx context.Context) error {
	ctx, finished, ok := l.StartInit(ctx)
	if !ok {
		return nil
	}
	go func() {
		defer finished()
		l.run(ctx)
	}()
	return nil
}

// apiService is the API server on the listener the node opened before it
// joined the cluster: that listener is closed on Stop even when the
// server never started.
type apiService struct {
	*api.Server
	ln net.Listener
}

func (a apiService) Stop(ctx context.Context) error {
	err := a.Server.Stop(ctx)
	if cerr := a.ln.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
		err = errors.Join(err, cerr)
	}
	return err
}

// mailerService closes the node's mailer last: its queue drains once
// nothing sends any more.
type mailerService struct{ *liveMailer }

func (mailerService) Start(context.Context) error      { return nil }
func (m mailerService) Stop(ctx context.Context) error { return m.Close(ctx) }
