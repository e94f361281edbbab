/** What a benchmark reports: one row of the results table per figure. */
export interface BenchFigure {
  figure: string;
  value: number;
  unit: string;
  /** The same measure for the thing we compare against, taken in the same run. */
  baseline?: number;
  /** value ÷ baseline. */
  ratio?: number;
  target?: string;
  note?: string;
}

export type Benchmark = () => Promise<BenchFigure[]>;
