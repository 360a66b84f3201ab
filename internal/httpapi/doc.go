// Package httpapi is agentchat's HTTP surface: one route table (server.go),
// the middleware (request id, access log, panic recovery, body limits, CORS,
// authentication), JSON handlers and the SSE writer (sse.go).
//
// Invariants:
//   - Handlers translate HTTP and nothing more: what a request means is its
//     wire format's (package dialect and its children decode requests and own
//     each response's exchange), what it does is the run service's. No
//     handler switches on a format beyond choosing the dialect.
//   - Every route under /v1 and /api/v1 is authenticated; the principal's
//     scope goes with every call, so another tenant's object is a 404.
//   - Errors are rendered in one place (errors.go): {"error":{code,message}}
//     with a fitting status; unknown errors are a 500 whose cause is logged
//     once, never sent.
//   - The request context owns the connection, not the run: a client leaving
//     a stream stops writing, never the agent.
package httpapi
