package config

import (
	"fmt"
	"net/url"
	"strings"
)

// CORSOriginList parses CORSOrigins into normalised origins (lower-case
// scheme and host, no default port dropped: browsers send the port they
// used, and an origin is compared as the exact string the browser sends).
// "*" alone means any origin. An entry with a path, query, user or a
// scheme other than http and https is refused, because the browser's
// Origin header never carries one and a near-miss would silently allow
// nothing.
func (c Config) CORSOriginList() ([]string, error) {
	var out []string
	for _, item := range strings.Split(c.CORSOrigins, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if item == "*" {
			out = append(out, item)
			continue
		}
		u, err := url.Parse(item)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%q is not an origin like https://app.example.com or http://localhost:3000", item)
		}
		if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("%q is not an origin: give scheme://host[:port] only, with no path", item)
		}
		if u.Path == "/" {
			return nil, fmt.Errorf("%q ends with a slash, which the browser's Origin header never has", item)
		}
		out = append(out, strings.ToLower(u.Scheme+"://"+u.Host))
	}
	if len(out) > 1 {
		for _, o := range out {
			if o == "*" {
				return nil, fmt.Errorf("* allows every origin and cannot be combined with others")
			}
		}
	}
	return out, nil
}
