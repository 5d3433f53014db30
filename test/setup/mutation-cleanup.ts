import { dropRunData } from './shared';

/** After `npm run mutate`: drops the databases and Redis keys its jest runs left (run ids starting with `mut`). */
void dropRunData('mut', 'mut');
