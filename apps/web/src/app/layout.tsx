import type { Metadata } from "next";
import { headers } from "next/headers";
import type { ReactNode } from "react";
import { Nav } from "~/components/nav";
import { SessionProvider, type Session } from "~/components/ui/session";
import { TRPCReactProvider } from "~/trpc/react";
import "./globals.css";

export const metadata: Metadata = {
  title: "whohas: who answers ARP for your LoadBalancer IPs",
  description: "Live view of which nodes answer ARP for each MetalLB layer 2 LoadBalancer IP.",
};

/** session reads who is signed in from the headers the hub set on this request (it strips any the browser sent). */
async function session(): Promise<Session | null> {
  const h = await headers();
  const user = h.get("x-whohas-user");
  const role = h.get("x-whohas-role");
  if (user === null || (role !== "viewer" && role !== "operator" && role !== "admin")) return null;
  return { user: decodeURIComponent(user), role, csrf: h.get("x-whohas-csrf") ?? "" };
}

export default async function RootLayout({ children }: { children: ReactNode }) {
  const s = await session();
  return (
    <html lang="en" suppressHydrationWarning>
      <body>
        <SessionProvider session={s}>
          <TRPCReactProvider csrf={s?.csrf ?? ""}>
            <Nav />
            {children}
          </TRPCReactProvider>
        </SessionProvider>
      </body>
    </html>
  );
}
