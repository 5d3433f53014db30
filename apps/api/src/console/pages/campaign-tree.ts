import type { NodeStats } from '../../../../core/src/outreach/branch-stats';

/**
 * The campaign page's sequence drawn as a tree (docs/outreach.md, branches): each step with its emails sent and the
 * prospects waiting there now, a condition's two branches indented under it; a step reached by two paths is drawn
 * once and named where the second joins it. And a table per A/B test with its verdict.
 */
export interface TreeRow {
  depth: number;
  /** "then" / "else" for a condition's branch, "" otherwise */
  branch: string;
  node: NodeStats;
  /** drawn already: this row only says the path joins it */
  joins: boolean;
}

export function sequenceTree(nodes: NodeStats[]): TreeRow[] {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const drawn = new Set<string>();
  const rows: TreeRow[] = [];
  const draw = (id: string | null | undefined, depth: number, branch: string): void => {
    // an email's path goes on at the same depth; a condition's branches one deeper
    for (let at = id; at; ) {
      const node = byId.get(at);
      if (!node) return;
      if (drawn.has(at)) return void rows.push({ depth, branch, node, joins: true });
      drawn.add(at);
      rows.push({ depth, branch, node, joins: false });
      branch = '';
      if (node.type === 'condition') {
        draw(node.then, depth + 1, 'then');
        draw(node.else, depth + 1, 'else');
        return;
      }
      at = node.next;
    }
  };
  draw(nodes[0]?.id, 0, '');
  // steps no path reaches (left by an edit) are drawn too, so every count shows
  for (const n of nodes) if (!drawn.has(n.id)) draw(n.id, 0, 'unreached');
  return rows;
}

export const CAMPAIGN_TREE = `<section id="tree"><h2>Sequence</h2>
<table class="sequence-tree"><thead><tr><th>Step</th><th>Sent</th><th>Waiting here</th></tr></thead><tbody>
<% it.tree.forEach(function (r) { %><tr data-step="<%= r.node.id %>"><td class="depth-<%= Math.min(r.depth, 9) %>"><% if (r.branch) { %><span class="muted"><%= r.branch %> →</span> <% } %><% if (r.joins) { %>joins <strong><%= r.node.id %></strong><% } else if (r.node.type === 'condition') { %><strong><%= r.node.id %></strong>: if <%= r.node.if %><% } else { %><strong><%= r.node.id %></strong><% } %></td><td><%= r.joins || r.node.type === 'condition' ? '' : r.node.sent %></td><td><%= r.joins ? '' : r.node.waiting %></td></tr><% }) %>
<tr><td class="muted">past the end of their path</td><td></td><td><%= it.stats.tree.ended %></td></tr>
</tbody></table>
<% it.stats.tests.forEach(function (t) { %><h3>A/B test at <%= t.step %></h3>
<table class="ab-test"><thead><tr><th>Variant</th><th>Subject</th><th>Weight</th><th>Sent</th><th>Replied</th><th>Clicked</th></tr></thead><tbody>
<% t.variants.forEach(function (v) { %><tr><td><%= String.fromCharCode(65 + v.variant) %></td><td><%= v.subject %></td><td><%= v.weight %></td><td><%= v.sent %></td><td><%= v.replied %></td><td><%= v.clicked %></td></tr><% }) %>
</tbody></table>
<p class="verdict"><% if (t.verdict.winner === 'no winner') { %>No winner (<%= t.verdict.why %><% if (t.verdict.p !== null) { %>, p = <%= t.verdict.p.toFixed(3) %><% } %>)<% } else { %>Winner: <%= String.fromCharCode(65 + t.verdict.winner) %><% if (t.verdict.p !== null) { %> (p = <%= t.verdict.p.toFixed(4) %>)<% } %><% } %><% if (t.winner) { %> · by <%= t.winner.metric %>, at least <%= t.winner.min_sample %> a variant, after <%= t.winner.after_hours %> h<% } %></p>
<% }) %></section>`;

