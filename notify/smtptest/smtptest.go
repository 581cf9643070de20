// Package smtptest runs a real SMTP server on loopback for tests of code
// that sends mail (notify, tasks/email). It is built on
// github.com/emersion/go-smtp, speaks plain SMTP (no TLS) with optional
// PLAIN auth, and records what it receives. Test code only.
package smtptest

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Server is a recording SMTP server. Its methods are safe for concurrent
// use.
type Server struct {
	Host string // 127.0.0.1
	Port int

	username, password string
	port               int // to listen on; 0 picks a free one

	srv    *smtp.Server
	ln     net.Listener
	served chan struct{}
	closed chan struct{}

	mu       sync.Mutex
	messages []Message
	rejects  []error // returned at DATA, one per attempt, before accepting
	always   error   // returned at DATA on every attempt
	hang     bool    // sessions block at EHLO until Close
	attempts int
	arrived  chan struct{} // signalled on each DATA attempt
}

// Option configures a Server.
type Option func(*Server)

// WithAuth requires PLAIN auth with these credentials.
func WithAuth(username, password string) Option {
	return func(s *Server) { s.username, s.password = username, password }
}

// WithPort listens on this loopback port instead of a free one, e.g. to
// bring up a server where a client was told to send while it was down.
func WithPort(port int) Option {
	return func(s *Server) { s.port = port }
}

// New starts a server on 127.0.0.1:0 and closes it in t.Cleanup.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{
		served:  make(chan struct{}),
		closed:  make(chan struct{}),
		arrived: make(chan struct{}, 100),
	}
	for _, o := range opts {
		o(s)
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)))
	if err != nil {
		t.Fatalf("smtptest: listen: %v", err)
	}
	s.ln = l
	addr := l.Addr().(*net.TCPAddr)
	s.Host, s.Port = addr.IP.String(), addr.Port

	s.srv = smtp.NewServer(smtp.BackendFunc(s.newSession))
	s.srv.Domain = "localhost"
	s.srv.AllowInsecureAuth = true
	s.srv.ReadTimeout = 10 * time.Second
	s.srv.WriteTimeout = 10 * time.Second
	s.srv.ErrorLog = nopLogger{}
	go func() {
		defer close(s.served)
		_ = s.srv.Serve(l)
	}()
	t.Cleanup(s.Close)
	return s
}

// Close stops the server and releases hanging sessions. Idempotent.
func (s *Server) Close() {
	select {
	case <-s.closed:
		return
	default:
		close(s.closed)
	}
	_ = s.srv.Close()
	// A Close right after New (a test that skips) can come before Serve
	// took the listener: go-smtp's Close then knows of no listener, and
	// Serve would block for ever on one nobody closes.
	_ = s.ln.Close()
	<-s.served
}

// RejectNext makes the next len(errs) delivery attempts fail at DATA with
// these errors, in order; use TempFailure or PermFailure.
func (s *Server) RejectNext(errs ...error) {
	s.mu.Lock()
	s.rejects = append(s.rejects, errs...)
	s.mu.Unlock()
}

// RejectAll makes every delivery attempt fail with err (nil to stop).
func (s *Server) RejectAll(err error) {
	s.mu.Lock()
	s.always = err
	s.mu.Unlock()
}

// Hang makes new sessions stall after the greeting, as an overloaded or
// broken server does, until Close.
func (s *Server) Hang() {
	s.mu.Lock()
	s.hang = true
	s.mu.Unlock()
}

// TempFailure is a 451 reply: the client should retry.
var TempFailure error = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}

// PermFailure is a 550 reply: retrying will not help.
var PermFailure error = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "relaying denied"}

// Messages returns the accepted messages so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.messages...)
}

// Attempts counts delivery attempts (DATA commands), accepted or not.
func (s *Server) Attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts
}

// WaitAttempts blocks until n delivery attempts have been seen in total or
// timeout passes, and reports whether they were.
func (s *Server) WaitAttempts(n int, timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for s.Attempts() < n {
		select {
		case <-s.arrived:
		case <-deadline.C:
			return s.Attempts() >= n
		}
	}
	return true
}

// Message is one accepted message.
type Message struct {
	From string
	To   []string
	Raw  []byte
}

// Header returns a decoded header value ("" when absent or unparsable).
func (m Message) Header(name string) string {
	msg, err := mail.ReadMessage(bytes.NewReader(m.Raw))
	if err != nil {
		return ""
	}
	v := msg.Header.Get(name)
	if dec, err := new(mime.WordDecoder).DecodeHeader(v); err == nil {
		return dec
	}
	return v
}

// Subject is the decoded Subject header.
func (m Message) Subject() string { return m.Header("Subject") }

// Part is one decoded MIME leaf part.
type Part struct {
	ContentType string // media type, e.g. "text/plain"
	Filename    string
	Data        []byte
}

// Parts decodes the message into its leaf parts, walking multiparts.
func (m Message) Parts() ([]Part, error) {
	msg, err := mail.ReadMessage(bytes.NewReader(m.Raw))
	if err != nil {
		return nil, err
	}
	return parts(msg.Header.Get("Content-Type"), msg.Header.Get("Content-Transfer-Encoding"), "", msg.Body)
}

// Text is the first text/plain part, decoded, with CRLF line ends turned
// into LF.
func (m Message) Text() string {
	ps, err := m.Parts()
	if err != nil {
		return ""
	}
	for _, p := range ps {
		if p.ContentType == "text/plain" && p.Filename == "" {
			return strings.ReplaceAll(string(p.Data), "\r\n", "\n")
		}
	}
	return ""
}

func parts(contentType, encoding, disposition string, body io.Reader) ([]Part, error) {
	mediaType, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		mediaType = "text/plain"
	}
	if strings.HasPrefix(mediaType, "multipart/") {
		var out []Part
		mr := multipart.NewReader(body, params["boundary"])
		for {
			p, err := mr.NextRawPart()
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			if err != nil {
				return nil, err
			}
			sub, err := parts(p.Header.Get("Content-Type"), p.Header.Get("Content-Transfer-Encoding"), p.Header.Get("Content-Disposition"), p)
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
		}
	}
	switch strings.ToLower(encoding) {
	case "quoted-printable":
		body = quotedprintable.NewReader(body)
	case "base64":
		body = base64.NewDecoder(base64.StdEncoding, body) // skips line breaks
	}
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	p := Part{ContentType: mediaType, Data: data}
	if _, dp, err := mime.ParseMediaType(disposition); err == nil {
		p.Filename = dp["filename"]
	}
	if p.Filename == "" {
		p.Filename = params["name"]
	}
	return []Part{p}, nil
}

func (s *Server) newSession(*smtp.Conn) (smtp.Session, error) {
	s.mu.Lock()
	hang := s.hang
	s.mu.Unlock()
	if hang {
		<-s.closed
		return nil, errors.New("closing")
	}
	return &session{s: s}, nil
}

type session struct {
	s      *Server
	from   string
	to     []string
	authed bool
}

var _ smtp.AuthSession = (*session)(nil)

func (ss *session) AuthMechanisms() []string {
	if ss.s.username == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (ss *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, username, password string) error {
		if username != ss.s.username || password != ss.s.password {
			return smtp.ErrAuthFailed
		}
		ss.authed = true
		return nil
	}), nil
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if ss.s.username != "" && !ss.authed {
		return smtp.ErrAuthRequired
	}
	ss.from = from
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s := ss.s
	s.mu.Lock()
	defer func() {
		s.mu.Unlock()
		select {
		case s.arrived <- struct{}{}:
		default:
		}
	}()
	s.attempts++
	if len(s.rejects) > 0 {
		err, s.rejects = s.rejects[0], s.rejects[1:]
		return err
	}
	if s.always != nil {
		return s.always
	}
	s.messages = append(s.messages, Message{From: ss.from, To: append([]string(nil), ss.to...), Raw: raw})
	return nil
}

func (ss *session) Reset() { ss.from, ss.to = "", nil }

func (ss *session) Logout() error { return nil }

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}
func (nopLogger) Println(...any)        {}

// String describes the server for failure messages.
func (s *Server) String() string { return fmt.Sprintf("smtptest.Server(%s:%d)", s.Host, s.Port) }
