// A loopback OpenID Provider / OAuth server for tests and local trials, built on `oidc-provider`.
//
// Two roles, one script:
//   --role idp       the portal's SSO identity provider (OIDC: auth code + PKCE, ID tokens with email)
//   --role provider  a plugin's OAuth provider (auth code + PKCE, rotating refresh tokens) that also
//                    serves a tiny protected API (GET /api/whoami), test counters (GET /test/stats)
//                    and POST /test/end-sessions (every access token served so far is refused after)
//
// Configuration is one JSON argument (--config '{...}'):
//   { "port": 0, "clientId": "...", "clientSecret": "..." | null, "redirectUris": ["..."],
//     "accessTokenTtl": 3600, "maxLifetime": 900, "tokenDelayMs": 0 }
// It listens on 127.0.0.1 only, prints `READY <issuer>` once listening, and exits by itself when
// its stdin closes (the test process that started it ended) or after maxLifetime seconds.
//
// Sign-in uses oidc-provider's development interactions: any login name is accepted; a login
// containing "@" is used as the email address, otherwise `<login>@example.test`.

import http from 'node:http';
import { parseArgs } from 'node:util';

import Provider from 'oidc-provider';

const { values } = parseArgs({
  options: { role: { type: 'string' }, config: { type: 'string' } },
});
const role = values.role;
if (role !== 'idp' && role !== 'provider') {
  console.error('usage: server.mjs --role idp|provider --config JSON');
  process.exit(2);
}
const cfg = JSON.parse(values.config ?? '{}');
const port = Number(cfg.port ?? 0);

const stats = { code_grants: 0, refresh_grants: 0, refresh_errors: 0, api_calls: 0, api_rejected: 0 };
// Access tokens presented to /api/whoami, and those POST /test/end-sessions has ended.
const served = new Set();
const ended = new Set();

function emailFor(login) {
  return login.includes('@') ? login.toLowerCase() : `${login.toLowerCase()}@example.test`;
}

const client = {
  client_id: cfg.clientId,
  redirect_uris: cfg.redirectUris,
  response_types: ['code'],
  grant_types: role === 'provider' ? ['authorization_code', 'refresh_token'] : ['authorization_code'],
};
if (cfg.clientSecret) {
  client.client_secret = cfg.clientSecret;
  // The portal (idp) authenticates with HTTP Basic, plugins (provider) with form fields, like most providers.
  client.token_endpoint_auth_method = role === 'idp' ? 'client_secret_basic' : 'client_secret_post';
} else {
  client.token_endpoint_auth_method = 'none';
}

const configuration = {
  clients: [client],
  claims: { openid: ['sub'], email: ['email', 'email_verified'] },
  scopes: ['openid', 'email', 'offline_access', 'api:read'],
  pkce: { required: () => true },
  features: { devInteractions: { enabled: true } },
  async findAccount(_ctx, sub) {
    return {
      accountId: sub,
      async claims() {
        return { sub, email: emailFor(sub), email_verified: true };
      },
    };
  },
  ttl: {
    AccessToken: Number(cfg.accessTokenTtl ?? 3600),
    AuthorizationCode: 60,
    IdToken: 3600,
    RefreshToken: 14 * 24 * 3600,
    Grant: 14 * 24 * 3600,
    Interaction: 600,
    Session: 3600,
  },
  cookies: { keys: ['loopback-test-only-cookie-key'] },
};
if (role === 'provider') {
  // Every code grant gets a refresh token, and every refresh rotates it: a refresh token used
  // twice is a replay, which oidc-provider answers with invalid_grant (and revokes the grant).
  configuration.issueRefreshToken = async () => true;
  configuration.rotateRefreshToken = () => true;
}

const server = http.createServer();
server.listen(port, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, configuration);
  provider.proxy = false;

  provider.on('grant.success', (ctx) => {
    const grant = ctx.oidc.params?.grant_type;
    if (grant === 'refresh_token') stats.refresh_grants += 1;
    if (grant === 'authorization_code') stats.code_grants += 1;
  });
  provider.on('grant.error', (ctx) => {
    if (ctx.oidc?.params?.grant_type === 'refresh_token') stats.refresh_errors += 1;
  });

  if (role === 'provider') {
    provider.use(async (ctx, next) => {
      // A slow token endpoint widens the window in which concurrent refreshes would collide.
      if (ctx.path === '/token' && ctx.method === 'POST' && cfg.tokenDelayMs) {
        await new Promise((resolve) => { setTimeout(resolve, Number(cfg.tokenDelayMs)); });
      }
      if (ctx.path === '/test/stats' && ctx.method === 'GET') {
        ctx.body = stats;
        return;
      }
      if (ctx.path === '/test/end-sessions' && ctx.method === 'POST') {
        // The provider ends every session it has served so far (no expiry was announced for it):
        // those access tokens are refused from now on, as Salesforce does after a session timeout.
        for (const value of served) ended.add(value);
        ctx.body = { ended: ended.size };
        return;
      }
      if (ctx.path === '/api/whoami' && ctx.method === 'GET') {
        stats.api_calls += 1;
        const match = /^Bearer (.+)$/.exec(ctx.get('authorization') || '');
        const token = match && !ended.has(match[1]) ? await provider.AccessToken.find(match[1]) : undefined;
        if (match) served.add(match[1]);
        if (!token || token.isExpired) {
          stats.api_rejected += 1;
          ctx.status = 401;
          ctx.body = { error: 'invalid_token' };
          return;
        }
        ctx.body = { sub: token.accountId, email: emailFor(token.accountId), client_id: token.clientId,
          scope: token.scope, token_suffix: match[1].slice(-6) };
        return;
      }
      await next();
    });
  }

  server.on('request', provider.callback());
  console.log(`READY ${issuer}`);
});

// Stop by ourselves: when the parent closes our stdin, or after the maximum lifetime.
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
process.stdin.resume();
setTimeout(() => process.exit(0), Number(cfg.maxLifetime ?? 900) * 1000).unref();
