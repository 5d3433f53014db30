FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --include=dev --no-audit --no-fund
COPY . .
RUN npx tsx scripts/generate.ts
USER node
EXPOSE 3000
CMD ["node_modules/.bin/tsx", "apps/api/src/server.ts"]
