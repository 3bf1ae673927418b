/** Head is a table's header row: one column header per label ("" for an unlabelled column of buttons). */
export function Head({ cols }: { cols: readonly string[] }) {
  return (
    <thead>
      <tr>
        {cols.map((c, i) => (
          <th key={i} scope="col">
            {c}
          </th>
        ))}
      </tr>
    </thead>
  );
}

/** Options are a select's choices, value to label. */
export function Options({ of }: { of: Readonly<Record<string, string>> }) {
  return (
    <>
      {Object.entries(of).map(([k, v]) => (
        <option key={k} value={k}>
          {v}
        </option>
      ))}
    </>
  );
}
