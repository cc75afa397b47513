// A vowel sound: a, e, i, o, and a u not said "you" (an update, an unknown; a user, a unit).
const VOWEL_SOUND = /^(?:[aeio]|u(?!s[aeiou]|ni|ti|bi|ri|r[ao]))/i;

/** "a suspended user", "an active user", "a user": the article English puts before a word in a message. */
export function withArticle(word: string): string {
  return `${VOWEL_SOUND.test(word) ? 'an' : 'a'} ${word}`;
}

/** "suspended", "activated", "revoked": the past participle of an action's verb, in a message. */
export function pastParticiple(verb: string): string {
  return verb.endsWith('e') ? `${verb}d` : `${verb}ed`;
}

export function capitalised(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
