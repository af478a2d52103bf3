// The token lives in session storage: it is gone when the tab closes, and
// it is sent as a Bearer token with every GraphQL request.
import { createContext, useCallback, useContext, useMemo, useState, type ReactNode } from "react";

export const TOKEN_KEY = "artifact-registry.token";

export function readToken(): string | null {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

interface AuthState {
  token: string | null;
  signIn(token: string): void;
  signOut(): void;
}

const AuthContext = createContext<AuthState>({ token: null, signIn() {}, signOut() {} });

export function AuthProvider({ children }: { children: ReactNode }) {
  const [token, setToken] = useState<string | null>(readToken);
  const signIn = useCallback((t: string) => {
    sessionStorage.setItem(TOKEN_KEY, t);
    setToken(t);
  }, []);
  const signOut = useCallback(() => {
    sessionStorage.removeItem(TOKEN_KEY);
    setToken(null);
  }, []);
  const value = useMemo(() => ({ token, signIn, signOut }), [token, signIn, signOut]);
  return <AuthContext.Provider value={value}>{children}</AuthContext.Provider>;
}

export function useAuth(): AuthState {
  return useContext(AuthContext);
}
