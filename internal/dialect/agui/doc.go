// Package agui is the AG-UI 1.0 stream (seeds 001 and 004): frames
// `id: <id>`, `event: <TYPE>`, `data: <json>` where TYPE equals the JSON
// "type", and `: keep-alive` comments. The id is the canonical event's seq,
// or "<seq>.<k>" for a frame that more frames of the same event follow
// (dialect.ID): every frame has its own id, so Last-Event-ID (seed 004)
// resumes between any two frames.
//
// The shapes follow @ag-ui/core 1.0 (its zod schemas and the client's
// verifyEvents), and win where a seed shape would be rejected by the real
// client: TOOL_CALL_ARGS always carries a delta string, TOOL_CALL_RESULT
// always carries messageId, toolCallId and content, TEXT_MESSAGE_END always
// follows a TEXT_MESSAGE_START, and no field is ever null (optional fields
// are omitted). Timestamps are integer milliseconds.
//
// # Modes
//
// Standard writes only fields of the AG-UI schema, so a strict client (the
// single-endpoint stream of an HttpAgent) sees no unknown field. Seed writes
// the same events plus seed 004's business fields, which a strict client
// strips with a warning: threadId and runId on every event; stage, messageId
// and toolCallName on TOOL_CALL_*; the parsed args object beside the delta on
// TOOL_CALL_ARGS (on the fragment that completes the arguments);
// tool_name, tool_call_id, tool_call_args, status, result and error on
// TOOL_CALL_RESULT; role, stage, status, answer, key_points, result_type,
// suggested_actions, error and ui_schema (package uischema) on the
// TEXT_MESSAGE_END of a completed message (a message closed early, because a
// tool call or the run's end followed its text, is not a result and gets no
// business fields).
//
// # Mapping
//
//   - run.started → RUN_STARTED (runId is the client's run id when it chose one).
//   - step.started/finished → STEP_STARTED/STEP_FINISHED.
//   - text deltas → TEXT_MESSAGE_START once per message, then TEXT_MESSAGE_CONTENT;
//     message.completed → TEXT_MESSAGE_END. A message completed without
//     deltas gets START, one CONTENT with its whole text, then END.
//   - reasoning deltas → REASONING_START, REASONING_MESSAGE_START,
//     REASONING_MESSAGE_CONTENT…, closed by REASONING_MESSAGE_END and
//     REASONING_END before any text, tool call or end. The reasoning message id
//     is the model message id with a "-reasoning" suffix, so it never collides
//     with the text message in a client's message list.
//   - tool call started/args/ready → TOOL_CALL_START/ARGS/END; result →
//     TOOL_CALL_RESULT (content is the text the model saw, or the structured
//     output as JSON text; messageId is the stored tool message, or
//     "<toolCallId>-result").
//   - tool awaiting → the AG-UI run ends: open steps, messages and tool calls
//     are closed and RUN_FINISHED carries outcome {type:"interrupt",
//     interrupts:[{id: confirmationId, reason:"confirmation", message,
//     toolCallId, expiresAt, responseSchema, metadata:{toolName, args}}]}.
//     A client answers with a RunAgentInput whose resume entry
//     {interruptId, status, payload:{approved, args?}} decides it. Just
//     before that RUN_FINISHED, a CUSTOM "on_interrupt" event carries the
//     same interrupt flattened ({id, reason, message, toolCallId, toolName,
//     args, expiresAt}): CopilotKit's useInterrupt and the clients before
//     AG-UI 1.0 know no outcome and listen for it, and answer with
//     forwardedProps.command {resume, interruptEvent} (CommandResume).
//   - run.resumed → a new RUN_STARTED (the client's new run id, or
//     "<run>-<seq>"), and the steps the interrupt closed are started again.
//   - retrieval → CUSTOM "retrieval" {query, hits} (none without hits); plan and
//     check → CUSTOM "plan"/"check"; context patch → STATE_DELTA.
//   - error → RUN_ERROR {message, code}; run.finished: succeeded → RUN_FINISHED
//     with result {status, answer, key_points, result_type, suggested_actions,
//     ui_schema} when there is an answer, and outcome {type:"success",
//     pendingToolCallIds} when the run left frontend tool calls for the client
//     to answer (the tool messages of the next RunAgentInput continue it);
//     failed → RUN_ERROR unless one was sent; cancelled → RUN_ERROR code
//     "cancelled".
//
// # Interrupts and ordering
//
// The canonical run has no "paused" event: after a call starts awaiting, the
// run may still report other calls ending before it stops. AG-UI forbids
// events after RUN_FINISHED, so from the interrupt until run.resumed (or
// run.finished) the encoder holds the run's events and releases them, in
// order, after the continuation's RUN_STARTED. Each AG-UI run therefore ends
// with exactly one interrupt; a second call awaiting in the same pause
// surfaces when the first is decided, which is also the order in which the
// engine resumes. Frames released this way are frames of the event that
// released them, numbered with it, so SSE ids never go backwards.
//
// A stream that starts mid-run (a replay after Last-Event-ID) gets a
// RUN_STARTED made up for the run before its first frame, so the client's
// "first event is RUN_STARTED" rule holds.
//
// # Dropped
//
// conversation.created (the thread id is on every run event), iteration
// boundaries, tool.running, the model name, cost and every other internal
// statistic (latencyMs, model) besides the run's token usage, which
// RUN_FINISHED and a run's final RUN_ERROR carry as AG-UI 1.0's usage list; a
// tool result's structured output beyond its text (seed 004's result is that
// text too), a context patch that is not a JSON array, and retrieval without
// hits.
package agui
