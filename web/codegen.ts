import type { CodegenConfig } from "@graphql-codegen/cli";

// Query types come from the server's own schema file: a schema change that
// breaks a query in src/ fails `npm run codegen` (and so the build).
const config: CodegenConfig = {
  // Every top-level *.graphqls, as gqlgen reads them (one file per area).
  schema: "../*.graphqls",
  documents: ["src/**/*.{ts,tsx}", "!src/gql/**/*"],
  ignoreNoDocuments: false,
  generates: {
    "src/gql/": {
      preset: "client",
      presetConfig: { fragmentMasking: false },
      config: {
        enumsAsTypes: true,
        useTypeImports: true,
        strictScalars: true,
        scalars: { Time: "string", Int64: "number", ID: "string" },
      },
    },
  },
  hooks: {},
};

export default config;
