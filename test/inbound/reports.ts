/** What a mailbox receives in the inbound tests: a plain message, delivery reports (RFC 3464), feedback reports (ARF). */

export function mail(headers: Record<string, string>, body: string): string {
  const all = { Date: new Date().toUTCString(), 'Message-ID': `<${Math.random().toString(36).slice(2)}@sender.test>`, ...headers };
  return `${Object.entries(all).map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n${body.replace(/\n/g, '\r\n')}\r\n`;
}

/**
 * A delivery report (RFC 3464) from MAILER-DAEMON of `domain` about `recipient`; `original`: the original's headers
 * attached (text/rfc822-headers), or nothing of the original.
 */
export function deliveryReport(r: { to: string; domain: string; mta: string; recipient: string; action: string; status: string; original?: string }): string {
  const original = r.original === undefined ? '' : `\n--B\nContent-Type: text/rfc822-headers\n\n${r.original}\n`;
  return mail(
    { From: `MAILER-DAEMON@${r.domain}`, To: r.to, Subject: 'Undelivered Mail Returned to Sender', 'MIME-Version': '1.0', 'Content-Type': 'multipart/report; report-type=delivery-status; boundary="B"' },
    `--B
Content-Type: text/plain

Your message could not be delivered.

--B
Content-Type: message/delivery-status

Reporting-MTA: dns; ${r.mta}

Final-Recipient: rfc822; ${r.recipient}
Action: ${r.action}
Status: ${r.status}
Diagnostic-Code: smtp; 550 ${r.status} <${r.recipient}>: Recipient address rejected: User unknown
${original}
--B--`,
  );
}

/** A mail server's report about a message this mailbox sent (the original's headers attached). */
export function dsn(to: string, from: string, recipient: string, action: string, status: string, originalId: string): string {
  const original = `From: ${to}\nTo: ${recipient}\nSubject: Hello Ann\nMessage-ID: ${originalId}`;
  return deliveryReport({ to, domain: from.split('@')[1]!, mta: 'mx.example.org', recipient, action, status, original });
}

/** A delivery report from a stranger that names a recipient and nothing of the original (or a made-up original). */
export function strangerDsn(to: string, recipient: string, originalId?: string): string {
  const original = originalId ? `To: ${recipient}\nSubject: Hello\nMessage-ID: ${originalId}` : undefined;
  return deliveryReport({ to, domain: 'stranger.test', mta: 'mx.stranger.test', recipient, action: 'failed', status: '5.1.1', original });
}

/** A feedback report (ARF) about `recipient`; with `original`, the original's headers attached. */
export function arfReport(to: string, recipient: string, original = ''): string {
  return mail(
    { From: 'abuse@isp.test', To: to, Subject: 'Complaint', 'MIME-Version': '1.0', 'Content-Type': 'multipart/report; report-type=feedback-report; boundary="F"' },
    `--F
Content-Type: text/plain

This is an email abuse report.

--F
Content-Type: message/feedback-report

Feedback-Type: abuse
User-Agent: test/1.0
Version: 1
Original-Rcpt-To: ${recipient}
${original ? `\n--F\nContent-Type: message/rfc822\n\n${original}\n\nHi` : ''}
--F--`,
  );
}

