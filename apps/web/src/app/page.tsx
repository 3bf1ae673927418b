import { Overview } from "~/components/overview";

export const dynamic = "force-dynamic";

export default function Page() {
  return (
    <main>
      <h1>Overview</h1>
      <Overview />
    </main>
  );
}
