import { db, poolTransaction } from '../../apps/core/src/db';

/** db.ts poolTransaction: the scheduler's claim runs in it, on a pool connection, without Prisma. */
describe('poolTransaction', () => {
  const name = (tag: string) => `pool-transaction ${tag} ${Date.now()}`;
  const count = async (tag: string) => db().account.count({ where: { name: tag } });

  it('commits what its work wrote once the work resolves, and answers what the work answered', async () => {
    const tag = name('commit');
    const answer = await poolTransaction(db(), async (query) => {
      const rows = await query<{ id: number }>('INSERT INTO accounts (name) VALUES ($1) RETURNING id', [tag]);
      // not visible outside the transaction before the commit
      expect(await count(tag)).toBe(0);
      return rows[0]!.id;
    });
    expect(typeof answer).toBe('number');
    expect(await count(tag)).toBe(1);
  });

  it('rolls back everything its work wrote when the work throws, and throws that error', async () => {
    const tag = name('rollback');
    await expect(
      poolTransaction(db(), async (query) => {
        await query('INSERT INTO accounts (name) VALUES ($1)', [tag]);
        throw new Error('the work failed');
      }),
    ).rejects.toThrow('the work failed');
    expect(await count(tag)).toBe(0);
  });

  it('hands its connection back whatever happened: more transactions than the pool has connections all run', async () => {
    const tag = name('release');
    for (let i = 0; i < 25; i++) {
      await poolTransaction(db(), async (query) => {
        await query('INSERT INTO accounts (name) VALUES ($1)', [tag]);
        if (i % 2) throw new Error('odd');
      }).catch(() => undefined);
    }
    expect(await count(tag)).toBe(13);
  });

  it('is ended by Postgres when its work leaves it idle past the deadline: nothing commits, and the next one runs', async () => {
    const tag = name('idle');
    await expect(
      poolTransaction(
        db(),
        async (query) => {
          await query('INSERT INTO accounts (name) VALUES ($1)', [tag]);
          await new Promise((resolve) => setTimeout(resolve, 2_500));
          await query('SELECT 1', []);
        },
        1,
      ),
    ).rejects.toThrow();
    expect(await count(tag)).toBe(0);
    const account = await db().account.create({ data: { name: name('after') } });
    expect(await poolTransaction(db(), (query) => query<{ id: number }>('SELECT id FROM accounts WHERE id = $1', [account.id]))).toEqual([{ id: account.id }]);
  });
});
