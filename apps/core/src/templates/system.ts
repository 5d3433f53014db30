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

/** The preference centre's "send me my link" email (preferences/email.ts): `list_name` and `link`. */
export const PREFERENCES_LINK_EMAIL = {
  subject: 'Your link to choose what you receive from {{ list_name }}',
  text: `Hello,

Someone (we hope you) asked for the link to your preferences for {{ list_name }}. Open it to choose your topics, pause
emails for a while, change your name or leave the list:

{{ link }}

If you did not ask for this, ignore this email: nothing changes.
`,
  html: `<!doctype html>
<html lang="en">
<body style="font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;font-size:16px;line-height:1.5;color:#1a1a1a">
<p>Hello,</p>
<p>Someone (we hope you) asked for the link to your preferences for <strong>{{ list_name }}</strong>. Open it to choose your topics, pause emails for a while, change your name or leave the list:</p>
<p><a href="{{ link }}">Choose what you receive</a></p>
<p>If you did not ask for this, ignore this email: nothing changes.</p>
</body>
</html>
`,
} as const;
