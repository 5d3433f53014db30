/**
 * The emails the service writes on its own behalf, as Liquid sources rendered by the one renderer like any template
 * (subscribers/email.ts fills them). `greeting`, `list_name` and `link` are their variables.
 */
export const CONFIRMATION_EMAIL = {
  subject: 'Confirm your subscription to {{ list_name }}',
  text: `{{ greeting }}

Please confirm that you want to receive emails from {{ list_name }} by opening this link:

{{ link }}

The link works for 7 days. If you did not ask for this, ignore this email: you will not be subscribed.
`,
  html: `<!doctype html>
<html lang="en">
<body style="font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;font-size:16px;line-height:1.5;color:#1a1a1a">
<p>{{ greeting }}</p>
<p>Please confirm that you want to receive emails from <strong>{{ list_name }}</strong>.</p>
<p><a href="{{ link }}" style="display:inline-block;padding:10px 18px;background:#1f5fbf;color:#ffffff;text-decoration:none;border-radius:4px;font-weight:600">Confirm subscription</a></p>
<p>Or open this address: <a href="{{ link }}">{{ link }}</a></p>
<p>The link works for 7 days. If you did not ask for this, ignore this email: you will not be subscribed.</p>
</body>
</html>
`,
} as const;
