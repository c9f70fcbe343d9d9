/** metav1.LabelSelector and its matching (labels.Selector from LabelSelectorAsSelector). */

export interface LabelSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | string;
  values?: string[];
}

export interface LabelSelector {
  matchLabels?: Record<string, string> | null;
  matchExpressions?: LabelSelectorRequirement[] | null;
}

/**
 * Whether `labels` match `selector`: every matchLabels pair and every requirement (an empty selector matches
 * everything). A requirement with an unknown operator matches nothing, as the API server would have refused it.
 */
export function matchesLabelSelector(
  selector: LabelSelector,
  labels: Readonly<Record<string, string>>,
): boolean {
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  return (selector.matchExpressions ?? []).every((r) => setRequirementMatches(r, labels) === true);
}

/**
 * One set-based requirement (In, NotIn, Exists, DoesNotExist), as label selectors and node selector terms
 * both have them; undefined for any other operator (node selectors add Gt and Lt).
 */
export function setRequirementMatches(
  r: LabelSelectorRequirement,
  labels: Readonly<Record<string, string>>,
): boolean | undefined {
  const has = Object.hasOwn(labels, r.key);
  const values = r.values ?? [];
  switch (r.operator) {
    case 'In':
      return has && values.includes(labels[r.key]!);
    case 'NotIn':
      return !has || !values.includes(labels[r.key]!);
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
    default:
      return undefined;
  }
}
