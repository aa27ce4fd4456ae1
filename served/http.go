package served

// http.go owns the requests to a server: JSON in and out, a per-request
// timeout, retries with backoff on 429, 503 and dropped connections, and
// the one-line error of a request that keeps failing (its status and the
// start of its body).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"
)

// ErrServer marks a server that refused or failed a request, or answered
// what cannot be scored.
var ErrServer = errors.New("server")

// maxBody bounds what a response may hold (a window's log-probabilities).
const maxBody = 1 << 30

// bodyExcerpt is how much of a failed response's body an error quotes.
const bodyExcerpt = 200

// client sends the requests of one server.
type client struct {
	base    string // the server's URL, without a trailing slash
	apiKey  string
	http    *http.Client
	timeout time.Duration // per request (each try); 0: none
	retries int           // tries after the first
	backoff time.Duration // before the first retry; doubled each time
}

// statusError is a response with a status other than 200.
type statusError struct {
	method, path string
	status       int
	body         string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s %s: %d %s: %s", e.method, e.path, e.status, http.StatusText(e.status), excerpt(e.body))
}

// excerpt is the start of a body, on one line.
func excerpt(b string) string {
	b = strings.Join(strings.Fields(b), " ")
	if len(b) > bodyExcerpt {
		return b[:bodyExcerpt] + "…"
	}
	if b == "" {
		return "(empty body)"
	}
	return b
}

// retryable says whether a failed try is worth another.
func retryable(err error) bool {
	var se *statusError
	if errors.As(err, &se) {
		return se.status == http.StatusTooManyRequests || se.status == http.StatusServiceUnavailable ||
			se.status == http.StatusBadGateway || se.status == http.StatusGatewayTimeout
	}
	var ne net.Error
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || (errors.As(err, &ne) && ne.Timeout())
}

// do sends one request (body nil: GET) and decodes the JSON answer into
// out, retrying what retryable allows; the error names the server, the
// route and, for a status, the start of the body.
func (c *client) do(ctx context.Context, path string, body, out any) error {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return err
		}
	}
	wait := c.backoff
	var err error
	for try := 0; ; try++ {
		if err = c.try(ctx, path, payload, out); err == nil {
			return nil
		}
		if ctx.Err() != nil || !retryable(err) || try >= c.retries {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait *= 2
	}
	if try := c.retries; retryable(err) && try > 0 {
		return fmt.Errorf("%w %s: %w (after %d retries)", ErrServer, c.base, err, try)
	}
	return fmt.Errorf("%w %s: %w", ErrServer, c.base, err)
}

// try is one attempt of do.
func (c *client) try(ctx context.Context, path string, payload []byte, out any) error {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	method := http.MethodGet
	var rd io.Reader
	if payload != nil {
		method, rd = http.MethodPost, bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("%s %s: no answer within %v (--server-timeout): %w", method, path, c.timeout, timeoutErr{})
		}
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("%s %s: the answer took longer than %v (--server-timeout): %w", method, path, c.timeout, timeoutErr{})
		}
		return fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return &statusError{method: method, path: path, status: resp.StatusCode, body: string(data)}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: the answer is not the JSON expected (%v): %s", method, path, err, excerpt(string(data)))
	}
	return nil
}

// timeoutErr is a try that ran out of time: retried like a dropped
// connection.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// notFound says whether err is a 404 (a route the server lacks).
func notFound(err error) bool {
	var se *statusError
	return errors.As(err, &se) && (se.status == http.StatusNotFound || se.status == http.StatusMethodNotAllowed)
}
