package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// serverRecord is what the httpcall scenario's server noted, as the
// server process hands it back on its standard output.
type serverRecord struct {
	Arrivals map[string][]time.Time `json:"arrivals"`
	Conns    []time.Time            `json:"conns"`
	Closed   []time.Time            `json:"closed"`
	Err      string                 `json:"err,omitempty"`
}

// ServeArrivals runs the httpcall scenario's server in this process, for
// a scenario run with ServerProcess in another: it writes the server's
// URL as the first line of out, serves until in ends (the scenario closes
// the pipe), then writes what it noted to out as one JSON document.
func ServeArrivals(in io.Reader, out io.Writer) error {
	s, err := startHTTPServer()
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(out, s.url); err != nil {
		_ = s.close()
		return err
	}
	_, _ = io.Copy(io.Discard, in)
	rec := serverRecord{}
	if err := s.close(); err != nil {
		rec.Err = err.Error()
	}
	s.mu.Lock()
	rec.Arrivals, rec.Conns, rec.Closed = s.arrivals, s.conns, s.closed
	s.mu.Unlock()
	return json.NewEncoder(out).Encode(&rec)
}

// serverCommand starts the server process: this program's
// `chime bench httpcall-server`. Tests put their own binary in its place.
var serverCommand = func() (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return exec.Command(exe, "bench", "httpcall-server"), nil
}

// processServer is the httpcall scenario's server in a process of its
// own (Options.ServerProcess): the requests' arrival is then noted by a
// process that shares neither the node's Go scheduler nor its GC, as a
// remote endpoint would, while it still shares the machine's CPUs.
type processServer struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	url   string
}

func startProcessServer() (*processServer, error) {
	cmd, err := serverCommand()
	if err != nil {
		return nil, fmt.Errorf("bench: server process: %w", err)
	}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("bench: server process: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("bench: server process: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: server process: %w", err)
	}
	p := &processServer{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	line, err := p.out.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://") {
		_ = stdin.Close()
		_ = cmd.Wait()
		return nil, fmt.Errorf("bench: server process: no URL (%q): %v", line, err)
	}
	p.url = strings.TrimSpace(line)
	return p, nil
}

// finish stops the server process and returns what it noted.
func (p *processServer) finish() (*serverRecord, error) {
	_ = p.stdin.Close()
	var rec serverRecord
	decErr := json.NewDecoder(p.out).Decode(&rec)
	if err := p.cmd.Wait(); err != nil {
		return nil, fmt.Errorf("bench: server process: %w", err)
	}
	if decErr != nil {
		return nil, fmt.Errorf("bench: server process: reading its record: %w", decErr)
	}
	if rec.Err != "" {
		return nil, fmt.Errorf("bench: server process: %w", errors.New(rec.Err))
	}
	return &rec, nil
}
