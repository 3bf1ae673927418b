"use client";

import Link from "next/link";
import { usePathname } from "next/navigation";
import { useEffect, useState } from "react";
import { BASE_PATH } from "~/env";
import { can, useSession, type Role } from "./ui/session";

const LINKS = [
  { href: "/", label: "Overview" },
  { href: "/ips", label: "IPs" },
  { href: "/nodes", label: "Nodes" },
  { href: "/incidents", label: "Incidents" },
  // The strictARP fix and its rollback stay reachable once the Overview is green again.
  { href: "/fix", label: "Fix", role: "operator" },
  { href: "/settings", label: "Settings", role: "admin" },
] as const satisfies readonly { href: string; label: string; role?: Role }[];

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
