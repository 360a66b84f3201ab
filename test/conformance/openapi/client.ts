// A tiny typed client over the generated OpenAPI types: it compiles only if
// the document describes these routes and shapes.
import type { paths, components } from "./agentchat.d.ts";

type Conversation = components["schemas"]["Conversation"];
type Run = paths["/v1/agent/runs/{runId}"]["get"]["responses"]["200"]["content"]["application/json"];
type ApiError = components["schemas"]["Error"];
type Decision = components["schemas"]["Decision"];
type NativeFrame = components["schemas"]["NativeFrame"];

export async function createConversation(base: string, token: string, title: string): Promise<Conversation> {
  const res = await fetch(`${base}/v1/conversations`, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: JSON.stringify({ title }),
  });
  if (!res.ok) {
    const err = (await res.json()) as ApiError;
    throw new Error(`${err.error.code}: ${err.error.message}`);
  }
  return (await res.json()) as Conversation;
}

export async function getRun(base: string, token: string, runId: string): Promise<Run["status"]> {
  const res = await fetch(`${base}/v1/agent/runs/${runId}`, { headers: { Authorization: `Bearer ${token}` } });
  const run = (await res.json()) as Run;
  const tokens: number = (run.usage.inputTokens ?? 0) + (run.usage.outputTokens ?? 0);
  void tokens;
  return run.status;
}

export const approve: Decision = { decision: "approve" };
export const frameName = (f: NativeFrame): string => f.event;
