/*
 * Bounded label values. A Prometheus series exists for every distinct label value, so a label
 * fed from outside (a model name from a request, a tool name from an MCP server, a cancel
 * reason given to cancel()) could grow the registry without end. A budget admits the first
 * `limit` distinct values and reports every later one as "other".
 */
export const OTHER = 'other';

export class LabelBudget {
  private readonly admitted = new Set<string>();

  constructor(private readonly limit: number) {}

  /** The value itself while the budget lasts (and for values already admitted), else "other". */
  of(value: string): string {
    if (this.admitted.has(value)) return value;
    if (this.admitted.size >= this.limit) return OTHER;
    this.admitted.add(value);
    return value;
  }
}
