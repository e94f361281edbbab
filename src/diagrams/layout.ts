/*
 * Lays a machine graph out with elkjs (layered, hierarchical: a compound state contains its
 * children and is sized around them). Box sizes come from the text they hold; every
 * coordinate of the result is absolute, so the SVG renderer only draws.
 */
import type { ElkExtendedEdge, ElkLabel, ElkNode, ElkPoint } from 'elkjs/lib/elk-api.js';
import { layoutElkGraphs } from './elk-runner.js';
import type { MachineGraph, StateGraphNode } from './machine-graph.js';
import { textWidth } from './text-width.js';

/** Sizes the layout reserves and the renderer uses; change them together. */
export const METRICS = {
  titleSize: 14,
  lineSize: 12,
  edgeLabelSize: 12,
  headerHeight: 28,
  lineHeight: 17,
  padX: 14,
  minWidth: 96,
  minHeight: 38,
  edgeLabelLineHeight: 15,
  initialSize: 10,
  margin: 12,
} as const;

export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface LaidOutState extends StateGraphNode, Box {
  /** The lines listed under the title: invoked actors, then events handled in place. */
  lines: { text: string; kind: 'invoke' | 'internal' }[];
}

export interface LaidOutEdge {
  source: string;
  target: string;
  /** One line per transition between the same two states. */
  labels: string[];
  points: ElkPoint[];
  labelBox?: Box;
}

export interface InitialMarker {
  /** The state entered first. */
  target: string;
  center: ElkPoint;
  points: ElkPoint[];
}

export interface StatechartLayout {
  machineId: string;
  width: number;
  height: number;
  states: LaidOutState[];
  edges: LaidOutEdge[];
  initials: InitialMarker[];
}

/** Read per compound state: each one is laid out as its own layered subgraph. */
const SUBGRAPH_OPTIONS: Record<string, string> = {
  'elk.direction': 'DOWN',
  'elk.spacing.nodeNode': '36',
  'elk.layered.spacing.nodeNodeBetweenLayers': '44',
  'elk.spacing.edgeNode': '18',
  'elk.spacing.edgeEdge': '14',
  'elk.layered.spacing.edgeNodeBetweenLayers': '18',
  'elk.spacing.edgeLabel': '4',
  'elk.edgeLabels.placement': 'CENTER',
  'elk.layered.nodePlacement.strategy': 'NETWORK_SIMPLEX',
  'elk.layered.cycleBreaking.strategy': 'DEPTH_FIRST',
};

const ROOT_OPTIONS: Record<string, string> = {
  ...SUBGRAPH_OPTIONS,
  'elk.algorithm': 'layered',
  'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
  'elk.edgeRouting': 'ORTHOGONAL',
  'elk.json.shapeCoords': 'ROOT',
  'elk.json.edgeCoords': 'ROOT',
};

function linesOf(node: StateGraphNode): LaidOutState['lines'] {
  return [
    ...(node.invokes ?? []).map((src) => ({ text: `invoke ${src}`, kind: 'invoke' as const })),
    ...[...new Set(node.internal ?? [])].map((event) => ({ text: event, kind: 'internal' as const })),
  ];
}

function contentWidth(node: StateGraphNode): number {
  const lineWidths = linesOf(node).map((line) => textWidth(line.text, METRICS.lineSize, false));
  return Math.max(textWidth(node.label, METRICS.titleSize, true), ...lineWidths) + 2 * METRICS.padX;
}

function bodyHeight(node: StateGraphNode): number {
  const lines = linesOf(node).length;
  return lines === 0 ? 0 : lines * METRICS.lineHeight + 6;
}

const initialId = (parent: string) => `${parent}::initial`;

/** ELK wants an edge in the node that contains both ends (or in the source, for an edge into its own child). */
function containerOf(source: string, target: string, parents: Map<string, string | undefined>, rootId: string): string {
  const ancestors = (id: string): string[] => {
    const chain: string[] = [];
    for (let at: string | undefined = id; at !== undefined; at = parents.get(at)) chain.push(at);
    return chain;
  };
  const fromSource = ancestors(source);
  const fromTarget = ancestors(target);
  if (source === target) return parents.get(source) ?? rootId;
  if (fromTarget.includes(source)) return source;
  if (fromSource.includes(target)) return target;
  const targetSet = new Set(fromTarget.slice(1));
  return fromSource.slice(1).find((id) => targetSet.has(id)) ?? rootId;
}

/** Lays out several machines at once (one worker thread for all of them). */
export async function layoutMachineGraphs(graphs: MachineGraph[]): Promise<StatechartLayout[]> {
  const prepared = graphs.map(toElkGraph);
  const laid = await layoutElkGraphs(prepared.map((p) => p.root));
  return prepared.map((p, i) => {
    const layout = laid[i];
    if (!layout) throw new Error(`statechart layout failed: no layout came back for ${graphs[i]?.machineId}`);
    return p.read(layout);
  });
}

type MergedEdges = Map<string, { source: string; target: string; labels: string[] }>;

/** The ELK graph of a machine, and how to read its layout back. */
function toElkGraph(graph: MachineGraph): { root: ElkNode; read(laid: ElkNode): StatechartLayout } {
  const rootId = '::graph';
  const parents = new Map<string, string | undefined>(graph.nodes.map((n) => [n.id, n.parent]));
  const hasChildren = new Set(graph.nodes.flatMap((n) => (n.parent ? [n.parent] : [])));
  const elkNodes = new Map<string, ElkNode>();
  const root: ElkNode = { id: rootId, layoutOptions: ROOT_OPTIONS, children: [], edges: [] };
  elkNodes.set(rootId, root);

  for (const node of graph.nodes) {
    const width = Math.max(METRICS.minWidth, contentWidth(node));
    const header = METRICS.headerHeight + bodyHeight(node);
    const elkNode: ElkNode = hasChildren.has(node.id)
      ? {
          id: node.id,
          children: [],
          edges: [],
          layoutOptions: {
            ...SUBGRAPH_OPTIONS,
            'elk.padding': `[top=${header + 10},left=18,bottom=18,right=18]`,
            'elk.nodeSize.constraints': 'MINIMUM_SIZE',
            'elk.nodeSize.minimum': `(${width}, ${header + 20})`,
          },
        }
      : { id: node.id, width, height: Math.max(METRICS.minHeight, header + (bodyHeight(node) > 0 ? 4 : 0)) };
    elkNodes.set(node.id, elkNode);
    const container = elkNodes.get(node.parent ?? rootId);
    if (node.initial && node.parent) {
      container?.children?.push({
        id: initialId(node.parent),
        width: METRICS.initialSize,
        height: METRICS.initialSize,
      });
    }
    container?.children?.push(elkNode);
  }

  const addEdge = (id: string, source: string, target: string, labels: string[]): void => {
    const container = elkNodes.get(containerOf(source, target, parents, rootId)) ?? root;
    const elkLabels: ElkLabel[] = labels.length
      ? [
          {
            id: `${id}:label`,
            // On the edge itself, so a label cannot be read as another edge's (ELK reads this per label).
            layoutOptions: { 'elk.edgeLabels.inline': 'true' },
            text: labels.join('\n'),
            width: Math.max(...labels.map((l) => textWidth(l, METRICS.edgeLabelSize))) + 10,
            height: labels.length * METRICS.edgeLabelLineHeight + 4,
          },
        ]
      : [];
    const edge: ElkExtendedEdge = { id, sources: [source], targets: [target], labels: elkLabels };
    container.edges = [...(container.edges ?? []), edge];
  };

  // One drawn edge per pair of states, labelled with every transition between them.
  const merged: MergedEdges = new Map();
  for (const edge of graph.edges) {
    const key = `${edge.source}->${edge.target}`;
    const entry = merged.get(key) ?? { source: edge.source, target: edge.target, labels: [] };
    if (!entry.labels.includes(edge.label)) entry.labels.push(edge.label);
    merged.set(key, entry);
  }
  for (const [key, edge] of merged) addEdge(key, edge.source, edge.target, edge.labels);
  for (const node of graph.nodes) {
    if (node.initial && node.parent)
      addEdge(`${initialId(node.parent)}->${node.id}`, initialId(node.parent), node.id, []);
  }

  return { root, read: (laid) => readLayout(graph, laid, merged) };
}

function readLayout(graph: MachineGraph, laid: ElkNode, merged: MergedEdges): StatechartLayout {
  const boxes = new Map<string, Box>();
  const edgesOut = new Map<string, ElkExtendedEdge>();
  const collect = (node: ElkNode): void => {
    boxes.set(node.id, { x: node.x ?? 0, y: node.y ?? 0, width: node.width ?? 0, height: node.height ?? 0 });
    for (const edge of node.edges ?? []) edgesOut.set(edge.id, edge);
    for (const child of node.children ?? []) collect(child);
  };
  collect(laid);

  const m = METRICS.margin;
  const shift = (p: ElkPoint): ElkPoint => ({ x: p.x + m, y: p.y + m });
  const pointsOf = (edge: ElkExtendedEdge | undefined): ElkPoint[] =>
    (edge?.sections ?? []).flatMap((s) => [s.startPoint, ...(s.bendPoints ?? []), s.endPoint]).map(shift);

  const states: LaidOutState[] = graph.nodes.map((node) => {
    const box = boxes.get(node.id) ?? { x: 0, y: 0, width: 0, height: 0 };
    return { ...node, x: box.x + m, y: box.y + m, width: box.width, height: box.height, lines: linesOf(node) };
  });
  const edges: LaidOutEdge[] = [...merged].map(([key, edge]) => {
    const out = edgesOut.get(key);
    const label = out?.labels?.[0];
    return {
      source: edge.source,
      target: edge.target,
      labels: edge.labels,
      points: pointsOf(out),
      ...(label
        ? {
            labelBox: {
              x: (label.x ?? 0) + m,
              y: (label.y ?? 0) + m,
              width: label.width ?? 0,
              height: label.height ?? 0,
            },
          }
        : {}),
    };
  });
  const initials: InitialMarker[] = graph.nodes.flatMap((node) => {
    if (!node.initial || !node.parent) return [];
    const box = boxes.get(initialId(node.parent));
    if (!box) return [];
    return [
      {
        target: node.id,
        center: { x: box.x + box.width / 2 + m, y: box.y + box.height / 2 + m },
        points: pointsOf(edgesOut.get(`${initialId(node.parent)}->${node.id}`)),
      },
    ];
  });
  return {
    machineId: graph.machineId,
    width: (laid.width ?? 0) + 2 * m,
    height: (laid.height ?? 0) + 2 * m,
    states,
    edges,
    initials,
  };
}
