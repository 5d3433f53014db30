/** The CLI's changes in the audit log (docs/teams.md), for scripts/admin.ts and its command files. */
import { auditedAfter, auditedChange, type AuditContext, type Change } from '../apps/core/src/audit';
import type { Db } from '../apps/core/src/db';

/** It runs with the database's credentials, as the admin token's holder would: the actor is the admin token, via cli. */
export const CLI_AUDIT: AuditContext = { actor: { kind: 'admin-token', label: 'admin token' }, via: 'cli', ip: null, requestId: null };

/** A command's change and its entry, in one transaction (core/audit `auditedChange`). */
export const cliChange = <T>(d: Db, change: Change<NoInfer<T>>, work: (db: Db) => Promise<T>): Promise<T> => auditedChange(d, CLI_AUDIT, change, work);

/** A change that waits on ACME between its writes: its entry follows it (core/audit `auditedAfter`). */
export const cliChangeAfter = <T>(d: Db, change: Change<NoInfer<T>>, work: (db: Db) => Promise<T>): Promise<T> => auditedAfter(d, CLI_AUDIT, change, work);
