// The build resolves the package react-style-singleton to this module
// (vite.config.ts). GraphiQL's dialogs lock the page's scroll with
// react-remove-scroll, whose rules that package adds in a <style> element:
// the pages' CSP (style-src 'self', no 'unsafe-inline') refuses it, and the
// browser logs a violation. This is the same API (add the rules while the
// first user is mounted, remove them with the last) over a constructed
// stylesheet, which the CSP allows: CSSOM, not markup.
import { useEffect, type FC } from "react";

export function stylesheetSingleton() {
  let counter = 0;
  let sheet: CSSStyleSheet | null = null;
  return {
    add(style: string) {
      if (counter === 0) {
        sheet = new CSSStyleSheet();
        sheet.replaceSync(style);
        document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
      }
      counter++;
    },
    remove() {
      counter--;
      if (counter === 0 && sheet) {
        const s = sheet;
        document.adoptedStyleSheets = document.adoptedStyleSheets.filter((x) => x !== s);
        sheet = null;
      }
    },
  };
}

export function styleHookSingleton() {
  const sheet = stylesheetSingleton();
  return (styles: string, isDynamic?: boolean) => {
    useEffect(() => {
      sheet.add(styles);
      return () => sheet.remove();
      // As the original: reapplied on a change of styles only when dynamic.
    }, [styles && isDynamic]);
  };
}

export function styleSingleton(): FC<{ styles: string; dynamic?: boolean }> {
  const useStyle = styleHookSingleton();
  return function Sheet({ styles, dynamic }) {
    useStyle(styles, dynamic);
    return null;
  };
}
