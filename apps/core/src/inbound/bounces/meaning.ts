/**
 * What a failure's words mean, read beyond any one server's phrases (docs/inbound.md, "Reading the meaning"): the thing
 * that failed (a mailbox, user, address, recipient or account; a domain or host) and what is said of it (does not exist,
 * unknown, not available; disabled, deactivated, closed for good), in English, German, French, Spanish, Portuguese,
 * Dutch, Italian, Japanese and Russian. Live answers (spam, size, a full mailbox, policy) are read as such first; the
 * sender's side and temporary states mean nothing for the address, whatever else the text says.
 */
export type Meaning = 'userunknown' | 'hostunknown' | 'suspend' | 'spamdetected' | 'mesgtoobig' | 'mailboxfull' | 'policyviolation';

/** lower case, Latin accents dropped (ü -> u, é -> e), whitespace folded */
export function plain(text: string): string {
  return text.normalize('NFD').replace(/([a-z])[\u0300-\u036f]+/gi, '$1').normalize('NFC').toLowerCase().replace(/[’`]/g, "'").replace(/\s+/g, ' ');
}

// a word starts where no Latin or Cyrillic letter is before it ("account" is not in "contact", "closed" not in "enclosed")
const alt = (words: string[]) => `(?:${words.map((w) => `(?<![\\p{Script=Latin}\\p{Script=Cyrillic}])${w}`).join('|')})`;

// the person's side: who or what the mail was for (a whole word: "conta" is not in "contact"; plurals allowed)
const noun = (words: string[]) => `${alt(words)}(?:e?s)?(?![\\p{Script=Latin}])`;
const WHO = noun([
  'mailbox', 'mail ?box', 'e-?mail account', 'account', 'user(?:name)?', 'recipient', 'addressee', '(?:e-?mail |recipient |destination )?address',
  'postfach', 'mailbox', 'benutzer(?:konto|name)?', 'nutzer', 'konto', 'empfanger(?:adresse)?', '(?:e-?mail-?)?adresse',
  'boite(?: aux lettres| mail| de reception)?', 'destinataire', 'utilisateur', 'compte', 'adresse(?: e-?mail| electronique)?',
  'buzon', 'usuario', 'destinatario', 'direccion(?: de correo)?', 'cuenta', 'casilla',
  'caixa(?: postal| de correio| de entrada)?', 'utilizador', 'endereco(?: de e-?mail)?', 'conta',
  'postbus', 'gebruiker', 'ontvanger', '(?:e-?mail)?adres', 'account',
  'casella(?: di posta| postale)?', 'utente', 'indirizzo(?: e-?mail| di posta)?',
  '宛先', 'メールアドレス', 'アドレス', 'ユーザー?', 'アカウント', 'メールボックス', '受信者', '受取人',
  'почтов\\S* ящик\\S*', 'ящик\\S*', 'пользовател\\S*', 'адрес\\S*', 'получател\\S*', 'учетн\\S* запис\\S*', 'аккаунт\\S*',
]);

// the receiving side: the domain or host
const WHERE = noun(['domain(?: name)?', 'host(?: ?name)?', 'domane', 'domaine', 'dominio', 'domein', 'hote', 'ドメイン', 'ホスト', 'домен\\S*']);

// ... does not exist, is unknown, is not available
const MISSING = alt([
  'does ?n[o\']t exist', 'not exist', 'no longer exists?', 'non-?existent', 'unknown', 'not (?:be )?found', 'could ?n[o\']t be found', 'cannot be found',
  'not known', 'not recogni[sz]ed', 'invalid', 'not valid', 'not available', 'unavailable', 'no longer (?:in use|valid|active|available)',
  'existiert nicht', 'existiert nicht mehr', 'nicht vorhanden', 'unbekannt', 'nicht bekannt', 'ungultig', 'nicht gefunden', 'nicht verfugbar', 'gibt es nicht',
  "n'existe (?:pas|plus)", 'inexistante?', 'inconnue?', 'introuvable', 'invalide', "n'est pas valide", 'non valide', 'indisponible', "n'est pas disponible", "n'est plus (?:valide|disponible)",
  'no existe', 'desconocid[oa]', 'inexistente', 'no encontrad[oa]', 'no (?:es )?valid[oa]', 'invalid[oa]', 'no (?:esta )?disponible', 'no se encuentra',
  'nao existe', 'desconhecid[oa]', 'nao encontrad[oa]', 'nao (?:e )?valid[oa]', 'indisponivel', 'nao (?:esta )?disponivel',
  'bestaat niet', 'bestaat niet meer', 'onbekend', 'niet gevonden', 'ongeldig', 'niet beschikbaar',
  'non esiste', 'inesistente', 'sconosciut[oa]', 'non trovat[oa]', 'non (?:e )?valid[oa]', 'non (?:e )?disponibile',
  '存在しません', '存在しない', '見つかりません', '見つからない', '不明', '無効',
  'не существует', 'не найден\\S*', 'неизвест\\S*', 'не доступ\\S*', 'недоступ\\S*',
]);

// ... disabled, deactivated, suspended, closed or deleted
const GONE = alt([
  'disabled', 'de-?activated', 'inactive', 'suspended', 'closed', 'terminated', 'deleted', 'removed', 'discontinued', 'cancell?ed', 'no longer active',
  'deaktiviert', 'geloscht', 'stillgelegt', 'aufgelost', 'gekundigt', 'inaktiv', 'nicht mehr aktiv',
  'desactivee?', 'suspendue?', 'supprimee?', 'fermee?', 'resiliee?', 'inacti(?:f|ve)', "n'est plus actif",
  'desactivad[oa]', 'suspendid[oa]', 'eliminad[oa]', 'borrad[oa]', 'cerrad[oa]', 'cancelad[oa]', 'inactiv[oa]', 'dad[oa] de baja',
  'desativad[oa]', 'suspens[oa]', 'excluid[oa]', 'encerrad[oa]', 'inativ[oa]', 'removid[oa]',
  'gedeactiveerd', 'uitgeschakeld', 'opgeheven', 'verwijderd', 'inactief', 'gesloten', 'opgezegd',
  'disattivat[oa]', 'disabilitat[oa]', 'sospes[oa]', 'chius[oa]', 'eliminat[oa]', 'cancellat[oa]', 'non (?:e )?piu attiv[oa]',
  '停止', '無効化', '削除', '解約', '閉鎖',
  'заблокирован\\S*', 'отключен\\S*', 'удален\\S*', 'деактивирован\\S*',
]);

// adjectives that come before the noun: unknown user, unbekannter Empfänger, invalid recipient
const BEFORE = alt(['unknown', 'invalid', 'non-?existent', 'no such', 'unbekannte[rs]?', 'ungultige[rs]?', 'onbekende', 'ongeldige', 'disabled', 'deactivated', 'closed', 'deleted', 'geloschte[rs]?', 'deaktivierte[rs]?']);

// within one clause: the noun and what is said of it, at most 60 characters apart, no sentence end between
const near = (a: string, b: string) => new RegExp(`${a}[^.;!?。]{0,60}?${b}`, 'u');
const NOT_FOUND = [near(WHO, MISSING), new RegExp(`${BEFORE} ${WHO}`, 'u'), new RegExp(`\\bno ${WHO}(?: here)? (?:by|with|under) (?:that|this) name`, 'u')];
const HOST_MISSING = [near(WHERE, MISSING), new RegExp(`${BEFORE} ${WHERE}`, 'u'), /\bno such domain\b/, /\bnxdomain\b/, /\bno (?:mx|a|aaaa) records?\b/, /\bunrout(?:e)?able\b/];
const DISABLED = [near(WHO, GONE), new RegExp(`${alt(['disabled', 'deactivated', 'closed', 'deleted', 'suspended', 'terminated', 'geloschte[rs]?', 'deaktivierte[rs]?'])} ${WHO}`, 'u')];

// what is never about the address, each read as its reason: spam, size, a full mailbox, policy
const SPAM = new RegExp(alt(['spam', 'junk', 'bulk mail', '迷惑', 'спам']), 'u');
const SIZE = new RegExp(
  alt(['too (?:large|big|long)', 'size\\b(?!=)', 'zu gro(?:ss|ß)', 'trop (?:volumineux|gros|grand)', 'demasiado grande', 'muito grande', 'te groot', 'troppo grande', 'サイズ', '大きすぎ', 'слишком больш\\S*']),
  'u',
);
const FULL = new RegExp(alt(['full\\b', 'quota', 'mailbox (?:size )?(?:exceeds|is over)', 'voll\\b', 'pleine?\\b', 'llen[oa]\\b', 'cheia\\b', 'vol\\b', 'piena\\b', 'いっぱい', '一杯', '容量', 'переполнен\\S*']), 'u');
const POLICY = new RegExp(alt(['polic(?:y|ies)', 'politi(?:que|ca)', 'richtlinie', 'beleid', 'sicherheitsgrunde?', 'ポリシー', 'политик\\S*']), 'u');
// ... and what is about the sending side or the connection: no meaning for the address
const ELSEWHERE = new RegExp(
  alt([
    'virus', 'malware', 'phishing', 'blacklist', 'blocklist', 'denylist', 'dnsbl', 'rbl\\b', 'reputation', 'spf\\b', 'dkim', 'dmarc', 'authenticat', 'relay',
    'tls\\b', 'reverse dns', 'ptr\\b', 'helo\\b', 'ehlo\\b', 'exceed', 'sender', 'absender', 'expediteur', 'remitente', 'remetente', 'afzender', 'mittente', '送信者',
    'отправител\\S*', 'mail from', 'rate limit', 'too many', 'zu viele', 'trop de', 'demasiad[oa]s', 'te veel', 'troppi',
  ]),
  'u',
);
// a state that will pass: temporarily, try again later
const TEMPORARY = new RegExp(
  alt(['temporar', 'try again', 'retry', 'later', 'vorubergehend', 'zeitweise', 'spater', 'temporairement', 'momentanement', 'plus tard', 'temporalmente', 'mas tarde', 'temporariamente', 'mais tarde', 'tijdelijk', 'temporaneamente', 'piu tardi', '一時', 'временно']),
  'u',
);

// the sender's side: an answer about our own address or domain, never about the recipient's
const SENDER = new RegExp(
  `${alt(['sender', 'absender', 'expediteur', 'remitente', 'remetente', 'afzender', 'mittente', '送信者', 'отправител\\S*'])}[^.;!?。]{0,20}?${alt(['address', 'domain', 'adresse', 'domaine', 'dominio', 'direccion', 'endereco', 'adres', 'domein', 'indirizzo', 'verif', 'rejected', 'unknown', 'not exist', 'ドメイン', 'アドレス', 'домен', 'адрес'])}`,
  'u',
);

/** Is this text about the sender's side (sender address or domain, MAIL FROM)? */
export const aboutSender = (text: string) => SENDER.test(plain(text));

/** Does this text say the account is disabled, deactivated, closed or deleted? (not: frozen, locked, for a while) */
export const saysGone = (text: string) => {
  const t = plain(text);
  return !TEMPORARY.test(t) && DISABLED.some((re) => re.test(t));
};

/**
 * What the words of a failure mean, or null when they say nothing clear. A live answer is read as its reason (spam,
 * size, a full mailbox, policy) before anything is read as a dead address; the sending side or a temporary state
 * means nothing for the address.
 */
export function meaningOf(text: string): Meaning | null {
  const t = plain(text);
  if (!t.trim()) return null;
  if (SPAM.test(t)) return 'spamdetected';
  if (FULL.test(t)) return 'mailboxfull';
  if (SIZE.test(t)) return 'mesgtoobig';
  if (POLICY.test(t)) return 'policyviolation';
  if (ELSEWHERE.test(t) || TEMPORARY.test(t)) return null;
  if (DISABLED.some((re) => re.test(t))) return 'suspend';
  if (HOST_MISSING.some((re) => re.test(t))) return 'hostunknown';
  if (NOT_FOUND.some((re) => re.test(t))) return 'userunknown';
  return null;
}
