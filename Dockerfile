# build: every dependency, the TypeScript compiled to dist/
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --include=dev --no-audit --no-fund
COPY . .
RUN npm run build

# run: production dependencies only, the compiled code and what it reads at run time
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY --from=build /app/generated ./generated
COPY --from=build /app/prisma ./prisma
# the state volume (generated secrets) is created from this directory, owned by the user the service runs as
RUN mkdir -p /var/lib/mailservice && chown node:node /var/lib/mailservice
USER node
EXPOSE 3000
# the API with its V8 flag (scripts/node-options.ts); the worker (docker-compose.yml) without
CMD ["node", "--max-semi-space-size=8", "dist/apps/api/src/server.js"]
