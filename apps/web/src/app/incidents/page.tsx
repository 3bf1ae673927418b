import { IncidentsList } from "~/components/incidents";

export const dynamic = "force-dynamic";

export default function IncidentsPage() {
  return (
    <main>
      <h1>Incidents</h1>
      <IncidentsList />
    </main>
  );
}
