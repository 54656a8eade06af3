declare module "virtual:layout-worker" {
  const source: string;
  export default source;
}
