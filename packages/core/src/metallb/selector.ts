/** A LabelSelector is Kubernetes' metav1.LabelSelector: matchLabels AND every matchExpression. */
export interface LabelSelector {
  readonly matchLabels?: Readonly<Record<string, string>>;
  readonly matchExpressions?: readonly {
    readonly key: string;
    readonly operator: "In" | "NotIn" | "Exists" | "DoesNotExist";
    readonly values?: readonly string[];
  }[];
}

/**
 * selectorMatches applies a LabelSelector as the API server does (apimachinery labels.Selector): an empty selector
 * matches everything; NotIn and DoesNotExist match objects without the key.
 */
export function selectorMatches(sel: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const value = labels[e.key];
    const values = e.values ?? [];
    switch (e.operator) {
      case "In":
        if (!has || value === undefined || !values.includes(value)) return false;
        break;
      case "NotIn":
        if (has && value !== undefined && values.includes(value)) return false;
        break;
      case "Exists":
        if (!has) return false;
        break;
      case "DoesNotExist":
        if (has) return false;
        break;
    }
  }
  return true;
}
