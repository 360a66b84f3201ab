// Package builtin holds the tools agentchat ships with: get_current_time,
// calculator, http_get, send_feishu_message, send_webhook and make_chart.
//
// Invariants:
//   - Read-only tools (time, calculator, http_get, make_chart) declare
//     ConfirmNever; tools that send something on the operator's behalf
//     (send_feishu_message, send_webhook) declare ConfirmAlways.
//   - Every tool is safe for concurrent calls and keeps no state between
//     calls; each call stays cheap whatever the model sends (the
//     calculator's limits, http_get's MaxBytes and Timeout), and the
//     registry's timeout bounds every call.
//
// Security invariants:
//   - http_get fetches URLs chosen by the model, so it refuses private,
//     loopback, link-local and similar addresses, checked on the IP actually
//     dialled (after DNS, on every redirect); only Config.HTTPGet.Allow
//     makes exceptions.
//   - The webhook URLs are operator configuration, trusted and not guarded;
//     the model chooses only the text sent to them. They may carry a token,
//     so no error quotes them.
package builtin
