// the one failed-authentication rule lives in core, so the SMTP submission server counts its failed logins alike
export { AuthFailures } from '../../../core/src/auth/failures';
