package file

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// URLError: a URL a client gave for a file cannot be taken (not http,
// https or data; refused by the SSRF guard; failed; not 2xx).
type URLError struct {
	URL    string // shortened for messages
	Reason string
}

func (e *URLError) Error() string {
	return fmt.Sprintf("the file at %s cannot be used: %s", e.URL, e.Reason)
}

// FromURL stores the file a client named by URL: a data: URL's bytes, or
// what an http(s) URL answers, fetched once through the fetch client (the
// SSRF guard of http_get: loopback and private addresses refused). The
// stored file is sc's, like an upload, with the same limits and sniffing.
func (s *Service) FromURL(ctx context.Context, sc chat.Scope, raw, name string) (store.File, error) {
	short := raw
	if len(short) > 64 {
		short = short[:64] + "…"
	}
	if strings.HasPrefix(raw, "data:") {
		b, err := decodeDataURL(raw, s.cfg.MaxBytes)
		if err != nil {
			return store.File{}, err
		}
		return s.CreateBytes(ctx, sc, name, b)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return store.File{}, &URLError{URL: short, Reason: "only http, https and data: URLs are taken"}
	}
	if s.cfg.Fetch == nil {
		return store.File{}, &URLError{URL: short, Reason: "this server fetches no URLs"}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return store.File{}, &URLError{URL: short, Reason: "not a valid URL"}
	}
	resp, err := s.cfg.Fetch.Do(req)
	if err != nil {
		reason := "it could not be fetched"
		if strings.Contains(err.Error(), "is not allowed") {
			reason = "private and local network addresses cannot be reached"
		}
		return store.File{}, &URLError{URL: short, Reason: reason}
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return store.File{}, &URLError{URL: short, Reason: fmt.Sprintf("it answered %s", resp.Status)}
	}
	if name == "" {
		name = path.Base(u.Path)
		if _, params, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition")); err == nil && params["filename"] != "" {
			name = params["filename"]
		}
	}
	f, err := s.Create(ctx, sc, Upload{Name: name, Body: resp.Body, Size: resp.ContentLength})
	if err != nil && !isRefusal(err) {
		return store.File{}, &URLError{URL: short, Reason: "it could not be read whole"}
	}
	return f, err
}

func isRefusal(err error) bool {
	var large *TooLargeError
	var typ *TypeError
	var quota *QuotaError
	return errors.As(err, &large) || errors.As(err, &typ) || errors.As(err, &quota)
}

// decodeDataURL reads a base64 (or percent-encoded) data: URL's bytes,
// refusing more than max.
func decodeDataURL(raw string, max int64) ([]byte, error) {
	comma := strings.IndexByte(raw, ',')
	if comma < 0 {
		return nil, &URLError{URL: "data:", Reason: "a data: URL needs a comma before its data"}
	}
	meta, data := raw[len("data:"):comma], raw[comma+1:]
	if strings.HasSuffix(meta, ";base64") {
		if int64(base64.StdEncoding.DecodedLen(len(data))) > max+3 {
			return nil, &TooLargeError{Limit: max}
		}
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			if b, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(data, "=")); err != nil {
				return nil, &URLError{URL: "data:", Reason: "its base64 data is not valid"}
			}
		}
		return b, nil
	}
	s, err := url.PathUnescape(data)
	if err != nil {
		return nil, &URLError{URL: "data:", Reason: "its data is not valid percent-encoding"}
	}
	if int64(len(s)) > max {
		return nil, &TooLargeError{Limit: max}
	}
	return []byte(s), nil
}
