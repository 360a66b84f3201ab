// Sign-in with an OpenID provider: the authorization-code flow with PKCE
// (RFC 7636, S256), run entirely by the browser as a public client (no
// client secret). The server only lists the providers it trusts
// (GET /v1/auth/providers) and verifies the token the console then sends.
//
// The verifier, state and nonce live in sessionStorage for the round trip
// only; the code and state are removed from the address bar before the
// exchange, and the token, like a pasted one, is kept in this tab only.

const PENDING = 'agentchat.oidc.pending';

function randomString(bytes = 32) {
  const b = crypto.getRandomValues(new Uint8Array(bytes));
  return base64url(b);
}

function base64url(bytes) {
  let s = '';
  for (const x of bytes) s += String.fromCharCode(x);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

async function challengeOf(verifier) {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier));
  return base64url(new Uint8Array(digest));
}

/** The console's own URL, without query or fragment: the redirect URI. */
function redirectURI() {
  return `${location.origin}${location.pathname}`;
}

/** begin sends the browser to the provider's sign-in page. */
export async function begin(provider) {
  const verifier = randomString();
  const state = randomString(16);
  const nonce = randomString(16);
  sessionStorage.setItem(PENDING, JSON.stringify({
    verifier, state, nonce, issuer: provider.issuer, name: provider.name, clientId: provider.clientId,
    tokenEndpoint: provider.tokenEndpoint, token: provider.token, redirectURI: redirectURI(), hash: location.hash,
  }));
  const u = new URL(provider.authorizationEndpoint);
  const q = u.searchParams;
  q.set('response_type', 'code');
  q.set('client_id', provider.clientId);
  q.set('redirect_uri', redirectURI());
  q.set('scope', provider.scopes);
  q.set('state', state);
  q.set('nonce', nonce);
  q.set('code_challenge', await challengeOf(verifier));
  q.set('code_challenge_method', 'S256');
  // Auth0 and others issue a JWT access token for an API only when asked for its audience.
  if (provider.token === 'access_token' && provider.audience) q.set('audience', provider.audience);
  location.assign(u.toString());
}

/** SignInError is a failed return from the provider; reason is for a person. */
export class SignInError extends Error {
  constructor(name, reason) {
    super(reason);
    this.provider = name;
  }
}

function payloadOf(jwt) {
  try {
    const part = jwt.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    return JSON.parse(atob(part + '='.repeat((4 - (part.length % 4)) % 4)));
  } catch {
    return null;
  }
}

/**
 * complete finishes a sign-in when the page is the provider's redirect
 * (?code=…&state=… or ?error=…): it returns the token to sign in with, or
 * null when the page is not such a redirect. It throws SignInError.
 */
export async function complete() {
  const params = new URLSearchParams(location.search);
  if (!params.has('code') && !params.has('error')) return null;
  const pending = JSON.parse(sessionStorage.getItem(PENDING) || 'null');
  sessionStorage.removeItem(PENDING);
  // The code must not stay in the address bar, the history or a bookmark.
  history.replaceState(null, '', redirectURI() + (pending?.hash ?? ''));
  if (!pending) throw new SignInError('', 'no sign-in was started in this tab');
  if (params.get('state') !== pending.state) throw new SignInError(pending.name, 'the answer does not belong to this sign-in (state)');
  // RFC 9207: a provider that names itself must be the one asked.
  if (params.has('iss') && params.get('iss') !== pending.issuer) throw new SignInError(pending.name, 'the answer came from another provider');
  if (params.has('error')) throw new SignInError(pending.name, params.get('error_description') || params.get('error'));
  const res = await fetch(pending.tokenEndpoint, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code', code: params.get('code'), redirect_uri: pending.redirectURI,
      client_id: pending.clientId, code_verifier: pending.verifier,
    }),
  });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new SignInError(pending.name, body.error_description || body.error || `the provider answered ${res.status}`);
  const idToken = body.id_token;
  if (idToken && payloadOf(idToken)?.nonce !== pending.nonce) throw new SignInError(pending.name, 'the ID token does not belong to this sign-in (nonce)');
  const tok = pending.token === 'id_token' ? idToken : body.access_token;
  if (!tok) throw new SignInError(pending.name, `the provider sent no ${pending.token}`);
  return tok;
}
