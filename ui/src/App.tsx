/** The app shell: sign-in with the daemon's one-time login token, the header, the Settings navigation and the routes. */
import { useEffect, useState, type MouseEvent, type ReactNode } from 'react';
import {
  ApiError,
  asApiError,
  clearToken,
  exchangeLoginToken,
  getJson,
  getToken,
  isAbort,
  onUnauthorized,
  setToken,
} from './api';
import { AuditView } from './AuditView';
import { BackupPage } from './BackupPage';
import { DrillPage } from './DrillPage';
import { GoalDetail } from './GoalDetail';
import { GoalsPage } from './GoalsPage';
import { RecoveryView } from './RecoveryView';
import { RepositoriesPage } from './RepositoriesPage';
import { ErrorBox, PageHeading, abbreviate } from './components';
import { ROUTES, useRoute, type Route } from './router';
import { RunDetail, RunsPage } from './RunsPage';
import type { Health } from './types';

/**
 * Take `#login=<token>` out of the address (and so out of history) before anything renders;
 * returns the one-time login token, or null.
 */
export function takeLoginToken(): string | null {
  const hash = window.location.hash;
  if (!hash.startsWith('#login=') && !hash.includes('login=')) return null;
  const params = new URLSearchParams(hash.slice(1));
  const token = params.get('login');
  window.history.replaceState(null, '', `${window.location.pathname}${window.location.search}`);
  return token && token.length > 0 ? token : null;
}

// One exchange per login token, even if React runs an effect twice.
const exchanges = new Map<string, Promise<string>>();
function exchangeOnce(loginToken: string): Promise<string> {
  let p = exchanges.get(loginToken);
  if (!p) {
    p = exchangeLoginToken(loginToken);
    exchanges.set(loginToken, p);
  }
  return p;
}

type Auth =
  | { readonly kind: 'exchanging' }
  | { readonly kind: 'signed-in' }
  | {
      readonly kind: 'signed-out';
      readonly reason: 'none' | 'expired' | 'login-failed';
      readonly error: ApiError | null;
    };

export function App({ loginToken: initialLoginToken }: { loginToken: string | null }) {
  const [loginToken, setLoginToken] = useState(initialLoginToken);
  const [auth, setAuth] = useState<Auth>(() =>
    initialLoginToken
      ? { kind: 'exchanging' }
      : getToken()
        ? { kind: 'signed-in' }
        : { kind: 'signed-out', reason: 'none', error: null },
  );

  // A login address pasted into this tab later (say, after the daemon restarted) only changes the hash.
  useEffect(() => {
    const onHash = () => {
      const t = takeLoginToken();
      if (t) {
        setLoginToken(t);
        setAuth({ kind: 'exchanging' });
      }
    };
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);

  useEffect(() => {
    if (!loginToken) return;
    let live = true;
    exchangeOnce(loginToken).then(
      (token) => {
        setToken(token);
        if (live) setAuth({ kind: 'signed-in' });
      },
      (e: unknown) => {
        if (live) setAuth({ kind: 'signed-out', reason: 'login-failed', error: asApiError(e) });
      },
    );
    return () => {
      live = false;
    };
  }, [loginToken]);

  // api.ts reports a refused token once (a second 401 for the same token finds it already gone).
  useEffect(() => onUnauthorized((error) => setAuth({ kind: 'signed-out', reason: 'expired', error })), []);

  if (auth.kind === 'exchanging') {
    return (
      <Shell health={null} route={null}>
        <PageHeading>Signing in…</PageHeading>
        <p role="status">Exchanging the one-time login token with the daemon.</p>
      </Shell>
    );
  }
  if (auth.kind === 'signed-out') return <SignIn reason={auth.reason} error={auth.error} />;
  // Signing out forgets the token in this tab only; the daemon and other signed-in tabs go on.
  return (
    <SignedIn
      onSignOut={() => {
        clearToken();
        setAuth({ kind: 'signed-out', reason: 'none', error: null });
      }}
    />
  );
}

function SignIn({ reason, error }: { reason: 'none' | 'expired' | 'login-failed'; error: ApiError | null }) {
  return (
    <Shell health={null} route={null}>
      <PageHeading>Open loopx from its daemon</PageHeading>
      <div className="card signin">
        {reason === 'expired' ? (
          <p role="alert">Your session is no longer accepted: the daemon was restarted, or it refused the token.</p>
        ) : null}
        {reason === 'login-failed' ? (
          <p role="alert">The login address was not accepted. Each login address works once.</p>
        ) : null}
        <p>
          Open the address printed by <code>loopx daemon</code> in this browser. It looks like{' '}
          <code className="address">http://127.0.0.1:&lt;port&gt;/#login=…</code> and signs this tab in once; the
          session lasts until the tab is closed. For another tab or browser, print a new address with{' '}
          <code>loopx daemon login-url</code>.
        </p>
        <p className="muted">
          Start the daemon with <code>loopx daemon</code> (optionally <code>--root R --port P</code>). It serves one
          runtime root, on this machine only.
        </p>
        {error && reason !== 'none' ? <ErrorBox error={error} title="Sign-in refused" /> : null}
      </div>
    </Shell>
  );
}

function SignedIn({ onSignOut }: { onSignOut: () => void }) {
  const route = useRoute();
  const [health, setHealth] = useState<Health | null>(null);

  useEffect(() => {
    const ctrl = new AbortController();
    getJson<Health>('/api/health', ctrl.signal)
      .then(setHealth)
      .catch((e: unknown) => {
        if (!isAbort(e)) setHealth(null);
      });
    return () => ctrl.abort();
  }, []);

  return (
    <Shell health={health} route={route} onSignOut={onSignOut}>
      <Page route={route} />
    </Shell>
  );
}

function Page({ route }: { route: Route }) {
  switch (route.page) {
    case 'backup':
      return <BackupPage />;
    case 'audit':
      return <AuditView key={route.recoveryId} recoveryId={route.recoveryId} />;
    case 'recovery':
      return <RecoveryView key={route.recoveryId} recoveryId={route.recoveryId} />;
    case 'repositories':
      return <RepositoriesPage />;
    case 'drills':
      return <DrillPage drillId={null} />;
    case 'drill':
      return <DrillPage key={route.drillId} drillId={route.drillId} />;
    case 'goals':
      return <GoalsPage />;
    case 'goal-page':
      return <GoalDetail key={`${route.root ?? ''}/${route.goalId}`} goalId={route.goalId} root={route.root ?? null} />;
    case 'runs':
      return <RunsPage />;
    case 'run':
      return <RunDetail key={`${route.root ?? ''}/${route.runId}`} runId={route.runId} root={route.root ?? null} />;
    case 'not-found':
      return (
        <>
          <PageHeading>Page not found</PageHeading>
          <p>
            There is no page at this address. Go to <a href={ROUTES.backup}>Backup &amp; recovery</a> or{' '}
            <a href={ROUTES.runs}>Runs</a>.
          </p>
        </>
      );
  }
}

/** The navigation entries. */
type Section = 'backup' | 'repositories' | 'drills' | 'goals' | 'runs';

/** The navigation entry each page belongs to. */
const SECTION: Partial<Record<Route['page'], Section>> = {
  backup: 'backup',
  audit: 'backup',
  recovery: 'backup',
  repositories: 'repositories',
  drills: 'drills',
  drill: 'drills',
  goals: 'goals',
  'goal-page': 'goals',
  runs: 'runs',
  run: 'runs',
};

/** The site header: the brand, the daemon's version and root, and Sign out when signed in. */
function SiteHeader({ health, onSignOut }: { health: Health | null; onSignOut?: () => void }) {
  return (
    <header className="site-header">
      <span className="brand">loopx</span>
      <span className="site-sub">Capability Center</span>
      <span className="header-end">
        {health ? (
          <span className="daemon-info" data-testid="daemon-info">
            daemon {health.version}
            {health.root_id ? (
              <>
                {' '}
                · root <code title={health.root_id}>{abbreviate(health.root_id, 14)}</code>
              </>
            ) : null}
          </span>
        ) : null}
        {onSignOut ? (
          <button type="button" className="sign-out" onClick={onSignOut}>
            Sign out
          </button>
        ) : null}
      </span>
    </header>
  );
}

/** The Settings navigation, marking the entry of the current section. */
function SideNav({ section }: { section: Section | null }) {
  return (
    <nav className="side-nav" aria-label="Settings">
      <p className="nav-title">Settings</p>
      <p className="nav-group" id="nav-capability-center">
        Capability Center
      </p>
      <ul aria-labelledby="nav-capability-center">
        <li>
          <a href={ROUTES.backup} aria-current={section === 'backup' ? 'page' : undefined}>
            Backup &amp; recovery
          </a>
        </li>
        <li>
          <a href={ROUTES.repositories} aria-current={section === 'repositories' ? 'page' : undefined}>
            Backup repositories
          </a>
        </li>
        <li>
          <a href={ROUTES.drills} aria-current={section === 'drills' ? 'page' : undefined}>
            Recovery drill
          </a>
        </li>
        <li>
          <a href={ROUTES.goals} aria-current={section === 'goals' ? 'page' : undefined}>
            Goals
          </a>
        </li>
        <li>
          <a href={ROUTES.runs} aria-current={section === 'runs' ? 'page' : undefined}>
            Runs
          </a>
        </li>
      </ul>
    </nav>
  );
}

/** The page frame: skip link, header, the navigation once signed in, and the main content. */
function Shell({
  health,
  route,
  children,
  onSignOut,
}: {
  health: Health | null;
  route: Route | null;
  children: ReactNode;
  onSignOut?: () => void;
}) {
  const section = route === null ? null : (SECTION[route.page] ?? null);

  function skip(ev: MouseEvent<HTMLAnchorElement>) {
    // Hash routing: move focus to the content without changing the address.
    ev.preventDefault();
    document.getElementById('main')?.focus();
  }

  return (
    <>
      <a className="skip-link" href="#main" onClick={skip}>
        Skip to content
      </a>
      <SiteHeader health={health} onSignOut={onSignOut} />
      <div className={route !== null ? 'layout' : 'layout no-nav'}>
        {route !== null ? <SideNav section={section} /> : null}
        <main id="main" tabIndex={-1} className="content">
          {children}
        </main>
      </div>
    </>
  );
}
