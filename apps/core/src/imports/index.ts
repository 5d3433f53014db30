export { IMPORT_COLUMNS, IMPORT_STATUSES, type ImportFormat, type ImportStatusValue } from './parse';
export { IMPORT_ERRORS_KEPT, importMaxBytes, importTooLarge, getImport, importView, queueImport, receiveImport, requeueImports, requireImportList, type ImportView } from './store';
export { failImport, runImport } from './run';
