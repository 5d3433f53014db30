-- a suppression added by hand in the console (docs/operator.md)
ALTER TYPE "SuppressionReason" ADD VALUE 'manual';
