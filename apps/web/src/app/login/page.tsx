import { BASE_PATH } from "~/env";

const ERRORS: Record<string, string> = {
  invalid: "Wrong user name or password.",
  throttled: "Too many failed sign-ins from your address: wait a minute and try again.",
  locked:
    "Too many failed sign-ins for this user: wait a minute and try again. If that was not you, tell your admin (the hub logs auth.login_throttled).",
  missing: "Enter your user name and password.",
};

/**
 * The sign-in page: a plain form (it works before any JavaScript loads) posting to the hub's /api/auth/login, which
 * sets the session cookie and sends the browser back to where it was going.
 */
export default async function LoginPage({ searchParams }: { searchParams: Promise<{ error?: string; next?: string }> }) {
  const q = await searchParams;
  const error = q.error === undefined ? null : (ERRORS[q.error] ?? "Sign-in failed.");
  return (
    <main>
      <form className="login" method="post" action={`${BASE_PATH}/api/auth/login`}>
        <h1>Sign in to whohas</h1>
        {error !== null && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        <label>
          User name
          <input name="username" autoComplete="username" required autoFocus />
        </label>
        <label>
          Password
          <input name="password" type="password" autoComplete="current-password" required />
        </label>
        <input type="hidden" name="next" value={q.next ?? `${BASE_PATH}/`} />
        <button type="submit">Sign in</button>
        <p className="muted">
          Users and roles are set in the hub&apos;s config (<code>auth.users</code>); a new hub with none writes an <code>admin</code>{" "}
          password to <code>initial-admin-password</code> next to its database.
        </p>
      </form>
    </main>
  );
}
