package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/errcode"
)

// Idempotent starts. A run-starting request (native chat, AG-UI runs, AI
// SDK chat, chain) may carry an Idempotency-Key header. The first request
// with a key starts the run; a repeat within run.IdempotencyWindow with the
// same key and body attaches to that run (its stream from the start, or the
// same 202) and never writes a second user message; the same key with
// another body is 422 idempotency_key_reused; a repeat while the first is
// still starting is 409 conflict. Keys are per principal.

const maxIdempotencyKey = 255

// keyed is a request's idempotency state.
type keyed struct {
	key    string
	runID  string // the run a repeat attaches to; "" for the request that starts it
	convID string
	// settled: the claim's outcome is recorded (settle).
	settled bool
}

// idempotency claims the request's key, if it has one. A repeat returns the
// run to attach to; an error is the answer to give.
func (s *Server) idempotency(r *http.Request, body []byte) (keyed, error) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		return keyed{}, nil
	}
	if len(key) > maxIdempotencyKey || !chat.ValidText(key) {
		return keyed{}, apiErr(http.StatusBadRequest, errcode.InvalidField, "the Idempotency-Key header must be 1 to %d characters of text", maxIdempotencyKey)
	}
	sum := sha256.Sum256(append([]byte(r.Method+" "+r.URL.Path+"?"+r.URL.Query().Get("format")+"\n"), body...))
	hash := hex.EncodeToString(sum[:])
	ctx := r.Context()
	claim, err := s.runs.ClaimKey(ctx, scopeOf(ctx), key, hash)
	switch {
	case err != nil:
		return keyed{}, err
	case claim.Claimed:
		return keyed{key: key}, nil
	case claim.Prior.BodyHash != hash:
		return keyed{}, apiErr(http.StatusUnprocessableEntity, errcode.IdempotencyKeyReused, "this Idempotency-Key came with another request; use a new key for a new request")
	case claim.Prior.RunID == "":
		return keyed{}, apiErr(http.StatusConflict, errcode.Conflict, "a request with this Idempotency-Key is still starting its run; try again")
	}
	return keyed{key: key, runID: claim.Prior.RunID, convID: claim.Prior.ConversationID}, nil
}

// settle records what the claiming request started (err nil) or releases
// its claim (the start failed).
// unsettled releases a claim that its request left without starting a run
// (it failed before, or it was not a start after all); handlers defer it.
func (s *Server) unsettled(r *http.Request, k *keyed) {
	s.settle(r, k, chat.Run{}, errNoStart)
}

// errNoStart: the request started no run.
var errNoStart = errors.New("no run started")

func (s *Server) settle(r *http.Request, k *keyed, run chat.Run, err error) {
	if k.key == "" || k.runID != "" || k.settled {
		return
	}
	k.settled = true
	ctx := r.Context()
	if err != nil {
		s.runs.ReleaseKey(ctx, scopeOf(ctx), k.key)
		return
	}
	if serr := s.runs.KeyStarted(ctx, scopeOf(ctx), k.key, run); serr != nil {
		s.log.WarnContext(ctx, "record idempotency key", "err", serr)
	}
}

// attach streams the run a repeated key started, from its start, in the
// request's wire format.
func (s *Server) attach(w http.ResponseWriter, r *http.Request, k keyed, enc dialect.Exchange) error {
	ctx := r.Context()
	st, err := s.runs.Follow(ctx, scopeOf(ctx), "", k.runID, 0)
	if err != nil {
		return runErr(err)
	}
	w.Header().Set("X-Run-ID", k.runID)
	w.Header().Set("X-Conversation-ID", k.convID)
	s.resume(ctx, st, enc, dialect.ID{}, false)
	s.serveStream(w, r, st, enc)
	return nil
}
