import { labelCells } from '../../apps/api/src/console/cards';

/** Tables as cards on a phone (cards.ts): each body cell carries its column's heading; a table without a head stays as it is. */
describe('labelCells', () => {
  it("labels each body cell with its column's heading, counting a row's heading cell and colspans", () => {
    const html = `<table class="x"><thead><tr><th>Id</th><th colspan="2">Who <span class="muted">(name)</span></th><th>Say "hi"</th></tr></thead><tbody>
<tr><th>1</th><td>a</td><td>b</td><td class="c">c</td></tr><tr><td colspan="3">wide</td><td data-label="own">d</td></tr></tbody></table>`;
    expect(labelCells(html)).toBe(`<table data-cards class="x"><thead><tr><th>Id</th><th colspan="2">Who <span class="muted">(name)</span></th><th>Say "hi"</th></tr></thead><tbody>
<tr><th>1</th><td data-label="Who (name)">a</td><td data-label="">b</td><td data-label="Say &quot;hi&quot;" class="c">c</td></tr><tr><td data-label="Id" colspan="3">wide</td><td data-label="own">d</td></tr></tbody></table>`);
  });

  it('leaves a table without a head, and what is not a table, as they are', () => {
    const html = `<p>x</p><table class="facts"><tbody><tr><th>Email</th><td>a@b.test</td></tr></tbody></table>`;
    expect(labelCells(html)).toBe(html);
  });
});
