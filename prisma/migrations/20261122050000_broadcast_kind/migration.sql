-- AlterEnum: in a migration of its own, since a value added to an enum cannot be used in the transaction that adds it
ALTER TYPE "MessageKind" ADD VALUE 'broadcast';
