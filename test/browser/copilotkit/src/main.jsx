// A CopilotKit page as an app team would write it: CopilotChat against the
// CopilotKit runtime (server.mjs), whose agent is agentchat. The person's
// agentchat token rides in the runtime request's Authorization header and
// the runtime forwards it to agentchat. The page shows a confirmation
// through useInterrupt and offers one frontend tool, pick_colour.
import { StrictMode, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { CopilotKit, CopilotChat, useAgent, useInterrupt, useFrontendTool, useRenderTool } from '@copilotkit/react-core/v2';
import '@copilotkit/react-core/v2/styles.css';
import './app.css';
import { z } from 'zod';

const token = new URLSearchParams(location.search).get('token') ?? '';

function Approval() {
  useInterrupt({
    render: ({ event, resolve }) => {
      // agentchat's on_interrupt value ({id, message, toolName, args}), or
      // the RUN_FINISHED interrupt where the client reads AG-UI 1.0 outcomes.
      const c = event.value;
      const tool = c.toolName ?? c.metadata?.toolName;
      const args = c.args ?? c.metadata?.args;
      return (
        <div className="approval" data-testid="approval">
          <p data-testid="approval-message">{c.message}</p>
          <p>
            <code data-testid="approval-tool">{tool}</code> <code data-testid="approval-args">{JSON.stringify(args)}</code>
          </p>
          <button className="primary" data-testid="approve" onClick={() => resolve({ approved: true })}>Approve</button>
          <button data-testid="reject" onClick={() => resolve({ approved: false, reason: 'not now' })}>Reject</button>
        </div>
      );
    },
  });
  return null;
}

function Colour() {
  const [colour, setColour] = useState('');
  useFrontendTool({
    name: 'pick_colour',
    description: 'Pick a colour for the page and return it.',
    parameters: z.object({ colour: z.string().describe('the colour') }),
    handler: async ({ colour }) => {
      setColour(colour);
      return `picked ${colour}`;
    },
  });
  return (
    <p className="colour" data-testid="colour">
      {colour ? <span style={{ background: colour }} /> : null}
      {colour ? `colour: ${colour}` : 'no colour yet'}
    </p>
  );
}

// Shared state: the page sets the agent's state (it rides in the next run's
// RunAgentInput.state) and shows the state the agent sends back
// (STATE_SNAPSHOT, STATE_DELTA).
function SharedState() {
  const { agent, isReady } = useAgent();
  return (
    <p className="state">
      <button data-testid="share-state" disabled={!isReady} onClick={() => agent.setState({ colour: 'red', items: [] })}>
        Share {'{"colour":"red"}'}
      </button>{' '}
      state: <code data-testid="state">{JSON.stringify(agent.state ?? {})}</code>
    </p>
  );
}

// Every tool call the agent makes renders as a card in the chat.
function ToolCalls() {
  useRenderTool(
    {
      name: '*',
      render: ({ name, status, parameters, result }) => (
        <div className="tool-call" data-testid="tool-call" data-tool={name} data-status={status}>
          <code className="name">{name}</code> <code>{JSON.stringify(parameters)}</code> {status === 'complete' ? <span data-testid="tool-result">{String(result)}</span> : '…'}
        </div>
      ),
    },
    [],
  );
  return null;
}

function App() {
  return (
    <CopilotKit runtimeUrl="/api/copilotkit" headers={{ Authorization: `Bearer ${token}` }} enableInspector={false}>
      <Colour />
      <SharedState />
      <Approval />
      <ToolCalls />
      <CopilotChat />
    </CopilotKit>
  );
}

createRoot(document.getElementById('root')).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
