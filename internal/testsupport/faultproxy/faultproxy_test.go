package faultproxy

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// echo is a line echo server on loopback.
func echo(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					l, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(l)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, r *bufio.Reader, d time.Duration) (string, error) {
	_ = c.SetDeadline(time.Now().Add(d))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return "", err
	}
	return r.ReadString('\n')
}

// A blackhole holds data on an open connection, neither answered nor
// closed, and Heal delivers it; Cut closes the connection.
func TestBlackholeHealCut(t *testing.T) {
	p, err := Start(echo(t))
	require.NoError(t, err)
	defer func() { _ = p.Close() }()
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	r := bufio.NewReader(c)
	l, err := roundTrip(c, r, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, "ping\n", l)

	p.Blackhole()
	_, err = roundTrip(c, r, 300*time.Millisecond)
	var ne net.Error
	require.ErrorAs(t, err, &ne, "an answer came through the blackhole")
	require.True(t, ne.Timeout(), "%v: the connection was closed, not held", err)

	p.Heal()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	l, err = r.ReadString('\n')
	require.NoError(t, err, "the held ping was not delivered after Heal")
	require.Equal(t, "ping\n", l)

	p.Cut()
	_, err = roundTrip(c, r, 5*time.Second)
	require.Error(t, err)
	var te net.Error
	if errorsAs(err, &te) {
		require.False(t, te.Timeout(), "Cut left the connection open")
	}
	c2, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c2.Close()
	_, err = roundTrip(c2, bufio.NewReader(c2), 5*time.Second)
	require.NoError(t, err, "a new connection after Cut")
}

func errorsAs(err error, te *net.Error) bool {
	ne, ok := err.(net.Error)
	if ok {
		*te = ne
	}
	return ok
}

// BlackholeWhen lets chunks through until one carries the pattern, and
// holds that one and everything after.
func TestBlackholeWhen(t *testing.T) {
	p, err := Start(echo(t))
	require.NoError(t, err)
	defer func() { _ = p.Close() }()
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	r := bufio.NewReader(c)
	p.BlackholeWhen([]byte("pong"))
	l, err := roundTrip(c, r, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, "ping\n", l)
	_ = c.SetDeadline(time.Now().Add(300 * time.Millisecond))
	_, err = c.Write([]byte("pong\n"))
	require.NoError(t, err)
	_, err = r.ReadString('\n')
	require.Error(t, err, "the chunk that carried the pattern went through")
	p.Heal()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	l, err = r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "pong\n", l)
}

// CutAfter passes the chunk that carries the pattern on to the server,
// which reads it, and closes the client's connection before any answer;
// the next connection is forwarded as before.
func TestCutAfter(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = ln.Close() }()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		l, _ := bufio.NewReader(c).ReadString('\n')
		got <- l
		_, _ = c.Write([]byte("answer\n"))
	}()
	p, err := Start(ln.Addr().String())
	require.NoError(t, err)
	defer func() { _ = p.Close() }()
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	p.CutAfter([]byte("commit"))
	_, err = c.Write([]byte("commit\n"))
	require.NoError(t, err)
	require.Equal(t, "commit\n", <-got, "the server did not get the chunk")
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, err = bufio.NewReader(c).ReadString('\n')
	require.Error(t, err, "the answer reached the client")
}
