// Package upstream holds what the HTTP provider adapters (openai, anthropic)
// share about talking to a provider: how a failure becomes an *llm.Error, how
// a Retry-After is read, how the API key is kept out of every error text, and
// how the wait for the provider's first answer is bounded.
//
// Invariant: no string built here contains the API key. Provider messages and
// causes are scrubbed of it before they are kept, since error texts end up in
// logs, run records and, through the run's error event, in front of users.
package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentchat/agentchat/internal/llm"
)

// Provider describes one configured upstream, for error messages.
type Provider struct {
	// Name is how messages name the provider, e.g. "openai-compatible provider".
	Name string
	// Host is the provider's host, shown in messages so an operator sees which
	// upstream failed. Never the full URL: a URL may carry a key in its query.
	Host string
	// Secret is the API key; every text kept in an error is scrubbed of it.
	Secret string
}

// HostOf returns the host of rawURL, "" if it has none.
func HostOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	return u.Host
}

func (p Provider) label() string {
	if p.Host == "" {
		return p.Name
	}
	return p.Name + " (" + p.Host + ")"
}

// Scrub removes the API key from s.
func (p Provider) Scrub(s string) string {
	if len(p.Secret) < 4 { // a one-letter "key" would shred every message
		return s
	}
	return strings.ReplaceAll(s, p.Secret, "[redacted]")
}

// Cause returns err, or an error of the same text scrubbed of the API key if
// its text contains it. The scrubbed error keeps errors.Is for the
// conditions callers test (context errors, llm.ErrStreamCut, io.ErrUnexpectedEOF),
// but not errors.As to the SDK's types: those would print the key.
func (p Provider) Cause(err error) error {
	if err == nil || len(p.Secret) < 4 || !strings.Contains(err.Error(), p.Secret) {
		return err
	}
	return &scrubbed{msg: p.Scrub(err.Error()), orig: err}
}

type scrubbed struct {
	msg  string
	orig error
}

func (e *scrubbed) Error() string { return e.msg }

func (e *scrubbed) Is(target error) bool {
	switch target {
	case context.Canceled, context.DeadlineExceeded, llm.ErrStreamCut, io.ErrUnexpectedEOF:
		return errors.Is(e.orig, target)
	}
	return false
}

// Code maps a provider's HTTP status to an llm error code.
func Code(status int) string {
	switch {
	case status == http.StatusUnauthorized, status == http.StatusForbidden,
		status == http.StatusPaymentRequired: // DeepSeek and others: out of credit
		return llm.CodeUnauthorized
	case status == http.StatusTooManyRequests:
		return llm.CodeRateLimited
	case status == http.StatusRequestTimeout:
		return llm.CodeTimeout
	case status >= 500: // includes Anthropic's 529 overloaded
		return llm.CodeUnavailable
	case status >= 400:
		return llm.CodeBadRequest
	}
	return llm.CodeUnknown
}

// StatusError is the *llm.Error for a refused call: status and headers from
// the response, detail the provider's own message (may be empty).
func (p Provider) StatusError(status int, header http.Header, detail string, cause error) *llm.Error {
	code := Code(status)
	statusText := strconv.Itoa(status)
	if t := http.StatusText(status); t != "" {
		statusText += " " + t
	}
	var msg string
	switch code {
	case llm.CodeUnauthorized:
		// The provider's text for a bad key often quotes part of the key;
		// the status says all an operator needs.
		detail = ""
		switch status {
		case http.StatusPaymentRequired:
			msg = p.label() + " refused the call: payment required (check the account's balance)"
		case http.StatusForbidden:
			msg = p.label() + " denied access (" + statusText + "): check the API key's permissions"
		default:
			msg = p.label() + " rejected the API key (" + statusText + ")"
		}
	case llm.CodeRateLimited:
		msg = p.label() + " is rate limiting us (" + statusText + ")"
	case llm.CodeUnavailable:
		msg = p.label() + " is unavailable (" + statusText + ")"
	case llm.CodeTimeout:
		msg = p.label() + " timed out (" + statusText + ")"
	default:
		msg = p.label() + " refused the request (" + statusText + ")"
	}
	if detail = p.Scrub(strings.TrimSpace(detail)); detail != "" {
		msg += ": " + truncate(detail, 300)
	}
	return &llm.Error{
		Code:       code,
		Status:     status,
		Message:    msg,
		Err:        p.Cause(cause),
		RetryAfter: RetryAfter(header, time.Now()),
	}
}

// ErrorBodyMessage extracts the human message of an error body in the
// shapes providers use: {"error":{"message":…}}, {"error":"…"},
// {"message":…}. It falls back to the body's text when it is short and not JSON
// (a proxy's plain-text answer), and to "" otherwise (an HTML error page).
func ErrorBodyMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &v) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &inner) == nil && inner.Message != "":
			return inner.Message
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return s
		}
		return v.Message
	}
	text := strings.TrimSpace(string(body))
	if text == "" || strings.HasPrefix(text, "<") || len(text) > 300 {
		return ""
	}
	return text
}

// RetryAfter reads how long the provider asks us to wait: Retry-After-Ms
// (OpenAI), then Retry-After in seconds or as an HTTP date. 0 if absent.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e9 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < 1e6 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// errNoAnswer is the cause FirstAnswer cancels the request with.
var errNoAnswer = errors.New("no answer from the provider in time")

// FirstAnswer bounds the wait for the provider's response headers by
// timeout, leaving the stream that follows bounded only by the caller's ctx:
// a long answer is not a hung provider, but silence before any answer is.
//
// It returns the context to make the request with, and stop, which the
// caller calls once the response (or an error) is back: stop reports whether
// the bound fired. cancel ends the request and must be called when the
// stream is done.
func FirstAnswer(ctx context.Context, timeout time.Duration) (reqCtx context.Context, stop func() (fired bool), cancel func()) {
	reqCtx, cancelCause := context.WithCancelCause(ctx)
	cancel = func() { cancelCause(nil) }
	if timeout <= 0 {
		return reqCtx, func() bool { return false }, cancel
	}
	t := time.AfterFunc(timeout, func() { cancelCause(errNoAnswer) })
	stop = func() bool {
		t.Stop()
		return errors.Is(context.Cause(reqCtx), errNoAnswer)
	}
	return reqCtx, stop, cancel
}

// StartError classifies an error from starting a call that produced no
// HTTP status (the status case is StatusError): the caller's context, the
// first-answer bound, or a transport failure.
func (p Provider) StartError(ctx context.Context, err error, timedOut bool, timeout time.Duration) error {
	if e := p.ContextError(ctx, err); e != nil {
		return e
	}
	if timedOut {
		// The SDK reports our cancellation as context.Canceled; keeping it
		// would make a timeout look like the caller's own cancellation.
		return &llm.Error{
			Code:    llm.CodeTimeout,
			Message: fmt.Sprintf("%s did not answer within %s", p.label(), timeout),
			Err:     context.DeadlineExceeded,
		}
	}
	if isTransport(err) {
		return &llm.Error{
			Code:    llm.CodeUnavailable,
			Message: "cannot reach " + p.label() + ": " + p.Scrub(transportReason(err)),
			Err:     p.Cause(err),
		}
	}
	return &llm.Error{
		Code:    llm.CodeUnknown,
		Message: "calling " + p.label() + " failed: " + truncate(p.Scrub(err.Error()), 300),
		Err:     p.Cause(err),
	}
}

// ContextError returns the error to report when ctx has ended, nil while it
// has not. A deadline is a timeout *llm.Error; a cancellation is the
// caller's own decision and is returned as ctx's error (wrapping the cause),
// not as a provider failure.
func (p Provider) ContextError(ctx context.Context, cause error) error {
	switch {
	case ctx.Err() == nil:
		return nil
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &llm.Error{
			Code:    llm.CodeTimeout,
			Message: p.label() + " did not finish before the deadline",
			Err:     errors.Join(context.DeadlineExceeded, p.Cause(cause)),
		}
	default:
		return ctx.Err()
	}
}

// StreamCut is the error of a stream that stopped before its end marker.
func (p Provider) StreamCut(cause error) *llm.Error {
	msg := "the answer from " + p.label() + " stopped before its end"
	err := llm.ErrStreamCut
	if cause != nil {
		msg += " (" + p.Scrub(transportReason(cause)) + ")"
		err = fmt.Errorf("%w: %w", llm.ErrStreamCut, p.Cause(cause))
	}
	return &llm.Error{Code: llm.CodeStreamCut, Message: msg, Err: err}
}

// BadStream is the error of a stream whose events could not be parsed.
func (p Provider) BadStream(cause error) *llm.Error {
	return &llm.Error{
		Code:    llm.CodeBadStream,
		Message: "the answer from " + p.label() + " could not be parsed: " + truncate(p.Scrub(cause.Error()), 200),
		Err:     p.Cause(cause),
	}
}

func isTransport(err error) bool {
	var netErr net.Error
	var opErr *net.OpError
	var dnsErr *net.DNSError
	return errors.As(err, &netErr) || errors.As(err, &opErr) || errors.As(err, &dnsErr) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// transportReason is a short readable reason for a transport failure,
// without the request URL that *url.Error puts in front.
func transportReason(err error) string {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "connection closed"
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return "cannot resolve " + dnsErr.Name
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	return truncate(err.Error(), 200)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
