package httpapi

import (
	"fmt"
	"net/http"
	"time"

	"github.com/agentchat/agentchat/internal/usage"
)

// limitError is the 429 of a start refused by a limit: Retry-After, and
// the IETF RateLimit-Policy and RateLimit headers
// (draft-ietf-httpapi-ratelimit-headers) naming the limit, its quota and
// window, and what is left of it (nothing) until it resets.
func limitError(r *usage.Refusal, now time.Time) *Error {
	wait := int64(usage.RetryAfter(r.Reset, now) / time.Second)
	name := r.PolicyName()
	h := http.Header{}
	h.Set("RateLimit-Policy", fmt.Sprintf(`%q;q=%d;w=%d`, name, r.Limit.Max, r.Window()))
	h.Set("RateLimit", fmt.Sprintf(`%q;r=0;t=%d`, name, wait))
	limit := map[string]any{"scope": r.Limit.Scope, "kind": r.Limit.Kind, "max": r.Limit.Max, "used": r.Used,
		"resetsAt": r.Reset.UTC().Format("2006-01-02T15:04:05.000Z07:00")}
	if r.Limit.Cost() {
		limit["max"], limit["used"] = usage.Units(r.Limit.Max), usage.Units(r.Used)
	}
	return &Error{Status: http.StatusTooManyRequests, Code: r.Code, Message: r.Message(now), RetryAfter: int(wait),
		Header: h, Extra: map[string]any{"limit": limit}}
}
