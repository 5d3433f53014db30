import type { Template } from '../../../../generated/prisma/client';
import type { Tx } from '../db';
import { Unprocessable } from '../errors';
import type { CompiledEmail, RenderedEmail } from './content';
import { TemplateError } from './engine';
import { compileTemplate, findTemplate, renderStored } from './service';

/** The versions a render used, `[{id, version}]`: the send's write checks them (sending/repository.ts). */
export type TemplateStamp = { id: number; version: number }[];

interface Entry {
  template: Template;
  compiled: CompiledEmail;
  stamp: TemplateStamp;
}

/** Templates an API process keeps compiled; the oldest goes past this many. */
const MAX_ENTRIES = 1_000;

/**
 * The templates a process's sends name, compiled once and kept by account and reference (id or alias), so a send with
 * a template costs no query of its own: the send's one write checks that each version it rendered is still current
 * and writes nothing otherwise (`stale`); the caller then forgets the entry and renders again from the database. A
 * change on any API process is therefore seen by the next send everywhere. An API process makes one (createSending).
 */
export class TemplateCache {
  /** what is kept, or being read: sends that name a template at the same moment share one read and one compile */
  private readonly entries = new Map<string, Promise<Entry>>();
  /** reads of the database (a test's and the bench's way to see the cache at work) */
  loads = 0;

  private async load(db: Tx, accountId: number, ref: number | string): Promise<Entry> {
    this.loads++;
    const t = await findTemplate(db, accountId, ref);
    if (!t || t.kind !== 'template') throw new Unprocessable(`template ${JSON.stringify(ref)}: no such template in this account`);
    let compiled: CompiledEmail;
    try {
      compiled = compileTemplate(t, t.layout);
    } catch (err) {
      // stored content parsed when it was stored; a layout changed since may not fit it
      if (err instanceof TemplateError) throw new Unprocessable(`template ${JSON.stringify(ref)}: ${err.message}`);
      throw err;
    }
    const stamp = [{ id: t.id, version: t.version }, ...(t.layout ? [{ id: t.layout.id, version: t.layout.version }] : [])];
    return { template: t, compiled, stamp };
  }

  /** The send's email rendered from the template named `ref`, with the versions it used. 422 naming what is wrong. */
  async render(db: Tx, accountId: number, ref: number | string, variables: Record<string, unknown>): Promise<{ email: RenderedEmail; stamp: TemplateStamp }> {
    const key = `${accountId}:${ref}`;
    let pending = this.entries.get(key);
    if (!pending) {
      if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
      pending = this.load(db, accountId, ref);
      this.entries.set(key, pending);
      // a refusal or a failed read is not kept: the next send reads again
      pending.catch(() => {
        if (this.entries.get(key) === pending) this.entries.delete(key);
      });
    }
    const entry = await pending;
    // a text part made from the html is made at delivery (delivery/compose.ts), as for any html-only send
    return { email: renderStored(entry.template, entry.compiled, variables, { textAtDelivery: true }), stamp: entry.stamp };
  }

  /** Drops what the process kept of `ref` (its write found a version changed). */
  forget(accountId: number, ref: number | string): void {
    this.entries.delete(`${accountId}:${ref}`);
  }
}
