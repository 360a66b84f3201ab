// A page on another origin using the AI SDK's own React hook against
// agentchat: useChat with DefaultChatTransport, resume, and tool approval
// (addToolApprovalResponse + lastAssistantMessageIsCompleteWithApprovalResponses),
// and files (sendMessage({text, files}) with the FileList of a file input).
// The test gives it window.AGENTCHAT = {url, token, chatId} before it loads.
import { useRef, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { useChat } from '@ai-sdk/react';
import { DefaultChatTransport, isToolUIPart, lastAssistantMessageIsCompleteWithApprovalResponses } from 'ai';

const cfg = window.AGENTCHAT;

function Part({ part, approve }) {
  if (part.type === 'text') return <p className="text">{part.text}</p>;
  if (part.type === 'file') return <p className="file" data-media-type={part.mediaType}>{part.filename}</p>;
  if (!isToolUIPart(part)) return null;
  return (
    <div className="tool" data-state={part.state}>
      <span>{part.type}</span> <span className="state">{part.state}</span>
      {part.state === 'approval-requested' && (
        <>
          <button onClick={() => approve(part.approval.id, true)}>Approve</button>
          <button onClick={() => approve(part.approval.id, false)}>Deny</button>
        </>
      )}
    </div>
  );
}

function App() {
  const [input, setInput] = useState('');
  const files = useRef(null);
  const { messages, sendMessage, addToolApprovalResponse, status, error } = useChat({
    id: cfg.chatId,
    resume: true,
    transport: new DefaultChatTransport({
      api: `${cfg.url}/v1/agent/chat?format=vercel-ai`,
      headers: { Authorization: `Bearer ${cfg.token}` },
    }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  const approve = (id, approved) => addToolApprovalResponse({ id, approved, reason: approved ? undefined : 'no thanks' });
  return (
    <main>
      <p id="status">{status}</p>
      {error && <p id="error">{error.message}</p>}
      <ol id="messages">
        {messages.map((m) => (
          <li key={m.id} className={`message ${m.role}`}>
            {m.parts.map((p, i) => <Part key={i} part={p} approve={approve} />)}
          </li>
        ))}
      </ol>
      <form onSubmit={(e) => {
        e.preventDefault();
        const picked = files.current.files;
        sendMessage(picked.length ? { text: input, files: picked } : { text: input });
        setInput('');
        files.current.value = '';
      }}>
        <input id="input" aria-label="Message" value={input} onChange={(e) => setInput(e.target.value)} />
        <input id="files" type="file" multiple aria-label="Files" ref={files} />
        <button type="submit">Send</button>
      </form>
    </main>
  );
}

createRoot(document.getElementById('root')).render(<App />);
