"use client";

import { useState } from "react";
import { useMutation, useQuery } from "@tanstack/react-query";
import { useTRPC } from "~/trpc/react";
import { useCan } from "./ui/session";
import { Head, Options } from "./ui/table";
import { Empty, Failure, Skeleton } from "./ui/states";
import { Ago } from "./ui/time";

const DAY = 86_400_000;
const RETENTIONS = [1, 3, 7, 14, 30, 90, 365];
const days = (ms: number) => (ms % DAY === 0 ? `${ms / DAY} d` : `${Math.round(ms / 3_600_000)} h`);

/** SettingsPage: what admins change at run time (retention, read-API tokens), who may sign in, and the audit log. */
export function SettingsPage() {
  const trpc = useTRPC();
  const admin = useCan("admin");
  const q = useQuery({ ...trpc.settings.get.queryOptions(), enabled: admin });
  const audit = useQuery({ ...trpc.settings.audit.queryOptions({ limit: 200 }), enabled: admin, refetchInterval: 5000 });
  const retention = useMutation(trpc.settings.setRetention.mutationOptions({ onSuccess: () => void q.refetch() }));
  const create = useMutation(trpc.settings.createToken.mutationOptions({ onSuccess: () => void q.refetch() }));
  const revoke = useMutation(trpc.settings.revokeToken.mutationOptions({ onSuccess: () => void q.refetch() }));
  const [name, setName] = useState("");

  if (!admin) return <Empty>Settings need the admin role. Ask an admin, or sign in as one.</Empty>;
  if (q.error !== null) return <Failure message={q.error.message} />;
  if (q.data === undefined) return <Skeleton rows={8} />;
  const s = q.data;
  return (
    <>
      <h2>Retention</h2>
      <p>
        Per-minute traffic and resolved incidents are kept for <strong data-testid="retention">{days(s.retention.ms)}</strong> (
        {s.retention.source === "config" ? "from the config file, storage.retention" : "set here"}); the audit log is kept 400 days.
      </p>
      <div className="actions">
        <label>
          Keep{" "}
          <select
            value={s.retention.source === "config" ? "" : String(s.retention.ms)}
            disabled={retention.isPending}
            onChange={(e) => retention.mutate({ ms: e.target.value === "" ? null : Number(e.target.value) })}
            data-testid="retention-select"
          >
            <option value="">config file ({days(s.fileRetentionMs)})</option>
            {RETENTIONS.map((d) => (
              <option key={d} value={String(d * DAY)}>
                {d} {d === 1 ? "day" : "days"}
              </option>
            ))}
          </select>
        </label>
        {retention.isPending && <span className="progress">Saving…</span>}
        {retention.error !== null && (
          <span className="bad-text" role="alert">
            {retention.error.message}
          </span>
        )}
      </div>

      <Receivers />

      <h2>Read-API tokens</h2>
      <p className="muted">
        Bearer tokens for <code>/api/v1</code> (scripts, Grafana). The token is shown once; whohas keeps only its hash. The config
        file&apos;s <code>api.viewerTokenFile</code> works too.
      </p>
      {s.tokens.length === 0 ? (
        <Empty testId="no-tokens">No token yet.</Empty>
      ) : (
        <table data-testid="tokens">
          <Head cols={["Name", "Starts with", "Made by", "Made", "Last used", ""]} />
          <tbody>
            {s.tokens.map((t) => (
              <tr key={t.id}>
                <td>{t.name}</td>
                <td className="mono">{t.prefix}…</td>
                <td>{t.createdBy}</td>
                <td>
                  <Ago t={t.createdAt} />
                </td>
                <td>{t.lastUsed === null ? <span className="muted">never</span> : <Ago t={t.lastUsed} />}</td>
                <td>
                  <button
                    type="button"
                    disabled={revoke.isPending}
                    onClick={() => confirm(`Revoke ${t.name}? Scripts using it get 401 at once.`) && revoke.mutate({ id: t.id })}
                  >
                    Revoke
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <form
        className="actions"
        onSubmit={(e) => {
          e.preventDefault();
          create.mutate({ name });
        }}
      >
        <label>
          New token named{" "}
          <input
            value={name}
            onChange={(e) => setName(e.target.value)}
            placeholder="grafana"
            required
            pattern="[A-Za-z0-9._-]{1,64}"
            data-testid="token-name"
          />
        </label>
        <button type="submit" disabled={create.isPending}>
          Make token
        </button>
        {create.error !== null && (
          <span className="bad-text" role="alert">
            {create.error.message}
          </span>
        )}
      </form>
      {create.data !== undefined && (
        <p className="banner ok" role="status">
          Token <strong>{create.data.name}</strong> (copy it now, it is not shown again):{" "}
          <code className="token" data-testid="new-token">
            {create.data.token}
          </code>
        </p>
      )}

      <h2>Who can sign in</h2>
      <p className="muted">
        {s.methods.local ? "Local users (auth.users in the config file)" : "No local users"}
        {s.methods.proxy ? "; an authenticating proxy (auth.proxy)." : "."} Change them in the config file and restart the hub.
      </p>
      {s.users.length > 0 && (
        <table data-testid="users">
          <Head cols={["User", "Role"]} />
          <tbody>
            {s.users.map((u) => (
              <tr key={u.name}>
                <td>{u.name}</td>
                <td>{u.role}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}

      <h2>Audit log</h2>
      {audit.data === undefined ? (
        <Skeleton rows={4} />
      ) : audit.data.length === 0 ? (
        <Empty testId="no-audit">
          Nothing yet: every action that changes anything (re-announce, probe, acknowledge, settings, tokens) is recorded here with its
          user.
        </Empty>
      ) : (
        <table data-testid="audit">
          <Head cols={["When", "User", "Action", "Input", "Outcome", "Detail"]} />
          <tbody>
            {audit.data.map((e, i) => (
              <tr key={i} data-action={e.action} data-outcome={e.outcome}>
                <td>
                  <time dateTime={new Date(e.t).toISOString()}>{new Date(e.t).toLocaleString()}</time>
                </td>
                <td>{e.actor}</td>
                <td>{e.action}</td>
                <td className="mono wrap">{JSON.stringify(e.input)}</td>
                <td className={e.outcome === "ok" ? "ok-text" : "bad-text"}>{e.outcome}</td>
                <td className="wrap">{e.detail}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

const FORMAT_TEXT = {
  generic: "generic JSON, signed (Standard Webhooks)",
  slack: "Slack incoming webhook",
  alertmanager: "Alertmanager webhook (v4)",
} as const;

/** Receivers: where notifications go; add, edit, send a test (with the receiver's answer), see how deliveries fare. */
function Receivers() {
  const trpc = useTRPC();
  const list = useQuery({ ...trpc.alerts.receivers.queryOptions(), refetchInterval: 5000 });
  const deliveries = useQuery({ ...trpc.alerts.deliveries.queryOptions(), refetchInterval: 5000 });
  const save = useMutation(trpc.alerts.saveReceiver.mutationOptions({ onSuccess: () => void list.refetch() }));
  const remove = useMutation(trpc.alerts.deleteReceiver.mutationOptions({ onSuccess: () => void list.refetch() }));
  const test = useMutation(trpc.alerts.testReceiver.mutationOptions());
  const [form, setForm] = useState<{
    name: string;
    url: string;
    format: "generic" | "slack" | "alertmanager";
    secret: string;
    editing: boolean;
  }>({ name: "", url: "", format: "generic", secret: "", editing: false });
  return (
    <>
      <h2>Alert receivers</h2>
      <p className="muted">
        Webhooks told when several nodes answer for an IP (and when it is fixed). Receivers of the config file (<code>webhooks</code>) and
        environment are listed here and edited there.
      </p>
      {list.data === undefined ? (
        <Skeleton rows={2} />
      ) : list.data.length === 0 ? (
        <Empty testId="no-receivers">No receiver: nobody is told about incidents until you add one.</Empty>
      ) : (
        <table data-testid="receivers">
          <Head cols={["Name", "Format", "URL", "From", "Last delivered", "Problems", ""]} />
          <tbody>
            {list.data.map((r) => (
              <tr key={r.name} data-receiver={r.name}>
                <td>{r.name}</td>
                <td>
                  {FORMAT_TEXT[r.format]}
                  {r.signed ? "" : r.format === "generic" ? " (unsigned)" : ""}
                </td>
                <td className="mono">{r.url}</td>
                <td>{r.source === "settings" ? "Settings" : r.source === "env" ? "environment" : "config file"}</td>
                <td>{r.lastDelivered === null ? <span className="muted">never</span> : <Ago t={r.lastDelivered} />}</td>
                <td>
                  {r.gone ? <strong className="bad-text">answered 410 Gone: stopped until edited. </strong> : null}
                  {r.pending > 0 ? <span className="progress">{r.pending} pending. </span> : null}
                  {r.lastError === null ? null : <span className="bad-text">{r.lastError.error}</span>}
                </td>
                <td>
                  <button type="button" disabled={test.isPending} onClick={() => test.mutate({ name: r.name })} data-testid="test-receiver">
                    Send test
                  </button>{" "}
                  {r.source === "settings" && (
                    <>
                      <button type="button" onClick={() => setForm({ name: r.name, url: "", format: r.format, secret: "", editing: true })}>
                        Edit
                      </button>{" "}
                      <button
                        type="button"
                        disabled={remove.isPending}
                        onClick={() =>
                          confirm(`Delete receiver ${r.name}? Its pending notifications are cancelled.`) && remove.mutate({ name: r.name })
                        }
                      >
                        Delete
                      </button>
                    </>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {test.isPending && (
        <p className="progress" role="status">
          Sending a test notification…
        </p>
      )}
      {test.data !== undefined && (
        <p className={test.data.ok ? "banner ok" : "banner bad"} role="status" data-testid="test-result">
          {test.data.error === null
            ? `The receiver answered HTTP ${test.data.status ?? ""} in ${test.data.ms} ms`
            : test.data.status === null
              ? `Not sent or no answer: ${test.data.error}`
              : `The receiver answered HTTP ${test.data.status}: ${test.data.error}`}
        </p>
      )}
      {test.error !== null && (
        <p className="bad-text" role="alert">
          {test.error.message}
        </p>
      )}
      <form
        className="actions"
        onSubmit={(e) => {
          e.preventDefault();
          save.mutate(
            {
              name: form.name,
              url: form.url,
              format: form.format,
              secret: form.secret === "" ? null : form.secret,
              keepSecret: form.editing && form.secret === "",
            },
            { onSuccess: () => setForm({ name: "", url: "", format: "generic", secret: "", editing: false }) },
          );
        }}
        aria-label="add or edit a receiver"
      >
        <label>
          Name{" "}
          <input
            value={form.name}
            onChange={(e) => setForm({ ...form, name: e.target.value })}
            required
            readOnly={form.editing}
            pattern="[A-Za-z0-9._-]{1,64}"
            data-testid="receiver-name"
          />
        </label>
        <label>
          URL{" "}
          <input
            value={form.url}
            onChange={(e) => setForm({ ...form, url: e.target.value })}
            required
            type="url"
            placeholder="https://hooks.example/whohas"
            size={36}
            data-testid="receiver-url"
          />
        </label>
        <label>
          Format{" "}
          <select
            value={form.format}
            onChange={(e) => setForm({ ...form, format: e.target.value as typeof form.format })}
            data-testid="receiver-format"
          >
            <Options of={FORMAT_TEXT} />
          </select>
        </label>
        <label>
          Signing secret{" "}
          <input
            value={form.secret}
            onChange={(e) => setForm({ ...form, secret: e.target.value })}
            type="password"
            placeholder={form.editing ? "unchanged" : "optional, 16+ characters"}
            data-testid="receiver-secret"
          />
        </label>
        <button type="submit" disabled={save.isPending}>
          {form.editing ? "Save" : "Add receiver"}
        </button>
        {form.editing && (
          <button type="button" onClick={() => setForm({ name: "", url: "", format: "generic", secret: "", editing: false })}>
            Cancel
          </button>
        )}
        {save.error !== null && (
          <span className="bad-text" role="alert">
            {save.error.message}
          </span>
        )}
      </form>
      {(deliveries.data ?? []).length > 0 && (
        <details>
          <summary>Recent notifications ({deliveries.data?.length})</summary>
          <table data-testid="deliveries">
            <Head cols={["Decided", "Receiver", "IP", "Kind", "Status", "Attempts", "Last answer"]} />
            <tbody>
              {(deliveries.data ?? []).map((d) => (
                <tr key={d.id} data-status={d.status}>
                  <td>
                    <Ago t={d.createdAt} />
                  </td>
                  <td>{d.receiver}</td>
                  <td className="mono">{d.ip}</td>
                  <td>{d.kind}</td>
                  <td className={d.status === "delivered" ? "ok-text" : d.status === "pending" ? "progress" : "bad-text"}>{d.status}</td>
                  <td>{d.attempts}</td>
                  <td>{d.lastError ?? (d.lastStatus === null ? "" : `HTTP ${d.lastStatus}`)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </details>
      )}
    </>
  );
}
