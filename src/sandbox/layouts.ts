// The layouts the sandbox answers and calls back in: the interface document's, and those the live service has been
// seen to use (docs/callback-layouts.md, docs/live-service.md).

/** Each alternative layout on its own, then every one at once, and `rotate` (each invite the next alternative). */
export const CALLBACK_LAYOUTS = [
  'interface',
  'string-event',
  'verdict-spelling',
  'flat-prescription',
  'tracking-array',
  'all-alternatives',
] as const;
export type CallbackLayout = (typeof CALLBACK_LAYOUTS)[number];
export const CALLBACK_LAYOUT_SETTINGS = [...CALLBACK_LAYOUTS, 'rotate'] as const;
export type CallbackLayoutSetting = (typeof CALLBACK_LAYOUT_SETTINGS)[number];
/** What `rotate` goes through, invite after invite. */
export const ALTERNATIVE_LAYOUTS: readonly CallbackLayout[] = CALLBACK_LAYOUTS.filter((l) => l !== 'interface');

/**
 * How the operations answer (docs/live-service.md): as the interface document shows (`interface`), or in the
 * layouts public integrations of the live service read and send (`live`).
 */
export const SERVICE_LAYOUTS = ['interface', 'live'] as const;
export type ServiceLayout = (typeof SERVICE_LAYOUTS)[number];
