// Package faultproxy is a TCP proxy on loopback for partition tests: it
// stands between one chime node and its database and can blackhole the
// link (bytes stop in both directions, connections stay open, as when a
// network drops packets; they flow again, in order, on Heal, as TCP's
// retransmissions would deliver them), add latency to every chunk, or cut
// every connection. Test support only: it imports nothing of chime.
package faultproxy

import (
	"bytes"
	"net"
	"sync"
	"time"
)

// Proxy forwards connections from its loopback address to a target.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	cond    *sync.Cond
	black   bool
	latency time.Duration
	trigger []byte // BlackholeWhen's pattern, until a chunk carries it
	cutter  []byte // CutAfter's pattern, until a chunk carries it
	conns   map[net.Conn]struct{}
	closed  bool
	wg      sync.WaitGroup
}

// Start listens on 127.0.0.1 (a free port) and forwards to target.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is host:port to connect to instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Blackhole stops all data, in both directions, on existing and new
// connections, until Heal; nothing is closed.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	p.black = true
	p.mu.Unlock()
}

// BlackholeWhen blackholes the link as soon as a chunk from a client
// carries pattern (that chunk included): a partition that falls exactly
// between two statements of a transaction, say.
func (p *Proxy) BlackholeWhen(pattern []byte) {
	p.mu.Lock()
	p.trigger = bytes.Clone(pattern)
	p.mu.Unlock()
}

// CutAfter closes the connection of the first chunk from a client that
// carries pattern right after passing that chunk on to the server: the
// server gets the statement (a COMMIT, say) and runs it, the client never
// hears the answer, as when a failover or a dropped route falls between
// the two.
func (p *Proxy) CutAfter(pattern []byte) {
	p.mu.Lock()
	p.cutter = bytes.Clone(pattern)
	p.mu.Unlock()
}

// cutsAfter says whether chunk, from a client, sets CutAfter off.
func (p *Proxy) cutsAfter(chunk []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cutter != nil && bytes.Contains(chunk, p.cutter) {
		p.cutter = nil
		return true
	}
	return false
}

// Heal ends a blackhole: held data flows on.
func (p *Proxy) Heal() {
	p.mu.Lock()
	p.black = false
	p.cond.Broadcast()
	p.mu.Unlock()
}

// SetLatency delays every chunk by d in each direction (0: none).
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	p.latency = d
	p.mu.Unlock()
}

// Cut closes every open connection (both sides see a reset or EOF); new
// connections are forwarded as before.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
}

// Close stops listening, closes every connection and waits for the pumps.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.mu.Lock()
	p.closed, p.black = true, false
	p.cond.Broadcast()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

// pass waits out a blackhole and returns the latency to apply; false once
// the proxy is closed. chunk, when from a client, may set one off.
func (p *Proxy) pass(chunk []byte) (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.trigger != nil && chunk != nil && bytes.Contains(chunk, p.trigger) {
		p.black, p.trigger = true, nil
	}
	for p.black && !p.closed {
		p.cond.Wait()
	}
	return p.latency, !p.closed
}

func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
		_ = c.Close()
	}
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			_ = c.Close()
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) serve(c net.Conn) {
	defer p.wg.Done()
	// A connection opened during a blackhole is accepted (the kernel would
	// have) but reaches the server only after Heal, like a SYN retransmitted.
	if _, ok := p.pass(nil); !ok {
		p.untrack(c)
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		p.untrack(c)
		return
	}
	if !p.track(up) {
		p.untrack(c, up)
		return
	}
	var done sync.WaitGroup
	done.Add(2)
	go func() { defer done.Done(); p.pump(up, c, true) }()
	go func() { defer done.Done(); p.pump(c, up, false) }()
	done.Wait()
	p.untrack(c, up)
}

// pump copies src to dst chunk by chunk, holding each through a blackhole
// and delaying it by the latency; when either side ends, both are closed.
func (p *Proxy) pump(dst, src net.Conn, fromClient bool) {
	cut := false
	defer func() {
		_ = src.Close()
		if !cut {
			_ = dst.Close()
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			var chunk []byte
			if fromClient {
				chunk = buf[:n]
			}
			lat, ok := p.pass(chunk)
			if !ok {
				return
			}
			if lat > 0 {
				time.Sleep(lat)
			}
			if fromClient && p.cutsAfter(chunk) {
				// The client is cut off first, so that no answer can
				// reach it; the server gets the chunk and then the end of
				// the stream, not a reset, which would discard the chunk
				// unread. The other pump closes the server's side once
				// the server has answered (to nobody).
				cut = true
				_ = src.Close()
				_, _ = dst.Write(buf[:n])
				if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // EOF or a closed side: the other way ends too
			return
		}
	}
}
