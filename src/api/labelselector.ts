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
  for (const r of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, r.key);
    const values = r.values ?? [];
    switch (r.operator) {
      case 'In':
        if (!has || !values.includes(labels[r.key]!)) return false;
        break;
      case 'NotIn':
        if (has && values.includes(labels[r.key]!)) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}
