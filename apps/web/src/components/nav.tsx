"use client";

import Link from "next/link";
import { useQuery } from "@tanstack/react-query";
import { usePathname, useRouter } from "next/navigation";
import { useEffect, useState } from "react";
import { BASE_PATH } from "~/env";
import { useTRPC } from "~/trpc/react";
import { can, useSession, type Role } from "./ui/session";

const LINKS = [
  { href: "/", label: "Overview" },
  { href: "/ips", label: "IPs" },
  { href: "/nodes", label: "Nodes" },
  { href: "/incidents", label: "Incidents" },
  { href: "/clusters", label: "Clusters" },
  // The strictARP fix and its rollback stay reachable once the Overview is green again.
  { href: "/fix", label: "Fix", role: "operator" },
  { href: "/settings", label: "Settings", role: "admin" },
] as const satisfies readonly { href: string; label: string; role?: Role }[];

/**
 * ClusterSwitch names the cluster this hub watches and, in a fleet, goes to another's dashboard (its hub's address,
 * or the all-clusters page filtered to it when that hub published none). One cluster named "default": nothing shown.
 */
function ClusterSwitch() {
  const trpc = useTRPC();
  const router = useRouter();
  const clusters = useQuery({ ...trpc.fleet.directory.queryOptions(), refetchInterval: 30_000 });
  const all = clusters.data ?? [];
  const self = all.find((c) => c.self);
  if (self === undefined || (all.length === 1 && self.name === "default")) return null;
  if (all.length === 1)
    return (
      <span className="chip" data-testid="cluster-name" title="the cluster this hub watches (cluster.name)">
        {self.name}
      </span>
    );
  return (
    <select
      aria-label="cluster"
      data-testid="cluster-switch"
      value={self.name}
      onChange={(e) => {
        const c = all.find((x) => x.name === e.target.value);
        if (c === undefined || c.self) return;
        // The hub gives only http(s) addresses; checked here too, as this one assignment is a navigation.
        if (c.url !== null && /^https?:\/\//.test(c.url)) window.location.assign(c.url);
        else router.push(`/clusters?cluster=${encodeURIComponent(c.name)}`);
      }}
    >
      {all.map((c) => (
        <option key={c.name} value={c.name}>
          {c.name}
          {c.self ? " (this hub)" : c.reporting ? "" : " (not reporting)"}
        </option>
      ))}
    </select>
  );
}

/** Nav is the top bar: the pages, who is signed in (and sign out), and the light / dark switch (remembered here). */
export function Nav() {
  const path = usePathname();
  const session = useSession();
  const [theme, setTheme] = useState<"light" | "dark" | null>(null);
  useEffect(() => {
    const saved = localStorage.getItem("whohas-theme");
    setTheme(saved === "light" || saved === "dark" ? saved : matchMedia("(prefers-color-scheme: light)").matches ? "light" : "dark");
  }, []);
  useEffect(() => {
    if (theme === null) return;
    document.documentElement.dataset.theme = theme;
    localStorage.setItem("whohas-theme", theme);
  }, [theme]);
  return (
    <header className="top">
      <strong>whohas</strong>
      <nav aria-label="pages">
        {(session === null ? [] : LINKS.filter((l) => !("role" in l) || can(session.role, l.role))).map((l) => {
          const active = l.href === "/" ? path === "/" : path.startsWith(l.href);
          return (
            <Link key={l.href} href={l.href} aria-current={active ? "page" : undefined} className={active ? "active" : undefined}>
              {l.label}
            </Link>
          );
        })}
      </nav>
      {session !== null && <ClusterSwitch />}
      {session !== null && (
        <form method="post" action={`${BASE_PATH}/api/auth/logout`} className="who">
          <span className="muted">
            {session.user} ({session.role})
          </span>
          <input type="hidden" name="csrf" value={session.csrf} />
          <button type="submit">Sign out</button>
        </form>
      )}
      <button
        type="button"
        className="theme"
        onClick={() => setTheme(theme === "dark" ? "light" : "dark")}
        aria-label="switch between light and dark theme"
      >
        {theme === "light" ? "Dark theme" : "Light theme"}
      </button>
    </header>
  );
}
