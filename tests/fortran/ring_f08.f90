! A ring of ranks written with mpi_f08 only, on the rankmig_f08 module. The ring is a
! periodic Cartesian communicator made from the job's in a rankmig_on_comm callback
! (made at once, and again at every migration, in every process). Each
! iteration sends N doubles to the right (MPI_Sendrecv) and to the left (MPI_Isend,
! MPI_Irecv, MPI_Waitall), sums a value over the ranks (MPI_Allreduce) and mixes; at
! the end rank 0 gathers the vectors (MPI_Gather) and prints the bits of their sum.
! With --every-call, each other counted call is made once after the loop (each with
! its own count, so that a call counted wrongly shows in the matrix).
! tests/c/ring.c is its C twin: the same calls with the same counts, so the same
! RANKMIG_MATRIX_OUT matrix. Arguments: --size N --iters K [--pause-us U] (U
! microseconds of sleep per iteration, so that a run lasts long enough to migrate).
module ring_comm
  use, intrinsic :: iso_c_binding
  use mpi_f08
  implicit none
  type(MPI_Comm) :: ring = MPI_COMM_NULL          ! the ring, rebuilt by rebuild

contains

  !> The rankmig_on_comm callback: frees the old ring, makes one on the job's comm.
  subroutine rebuild(comm, arg) bind(C)
    type(MPI_Comm), value :: comm
    type(c_ptr), value :: arg
    integer :: ranks
    if (ring /= MPI_COMM_NULL) call MPI_Comm_free(ring)
    call MPI_Comm_size(comm, ranks)
    call MPI_Cart_create(comm, 1, [ranks], [.true.], .false., ring)
  end subroutine rebuild

end module ring_comm

program ring_f08
  use, intrinsic :: iso_c_binding
  use mpi_f08
  use rankmig_f08
  use ring_comm
  implicit none

  interface
    integer(c_int) function usleep(us) bind(C, name="usleep")
      import :: c_int
      integer(c_int), value :: us
    end function usleep
  end interface

  type(MPI_Comm) :: comm
  type(MPI_Request) :: requests(2)
  integer :: rank, ranks, n, left, right, i, pause
  logical :: every
  integer(c_int64_t), target :: iter
  integer(c_int64_t) :: iters
  real(c_double), allocatable, target :: v(:)
  real(c_double), allocatable :: from_left(:), from_right(:), all(:)
  real(c_double) :: mine, total
  character(len=16) :: hex

  call MPI_Init()
  call parse_args(n, iters, pause, every)
  if (rankmig_init(comm) /= 0) call fail('rankmig_init')
  call MPI_Comm_rank(comm, rank)
  call MPI_Comm_size(comm, ranks)
  allocate(v(n), from_left(n), from_right(n))
  do i = 1, n
    v(i) = dble(rank) + dble(i) / dble(n)
  end do
  iter = 0
  if (rankmig_register_data('iter', c_loc(iter), int(8, c_size_t)) /= 0) call fail('register')
  if (rankmig_register_data('v', c_loc(v), int(8, c_size_t) * int(n, c_size_t)) /= 0) &
       call fail('register')
  if (rankmig_on_comm(rebuild, c_null_ptr) /= 0) call fail('rankmig_on_comm')
  do while (iter < iters)
    call MPI_Cart_shift(ring, 0, 1, left, right)
    call MPI_Sendrecv(v, n, MPI_DOUBLE_PRECISION, right, 0, from_left, n, &
         MPI_DOUBLE_PRECISION, left, 0, ring, MPI_STATUS_IGNORE)
    call MPI_Irecv(from_right, n, MPI_DOUBLE_PRECISION, right, 1, ring, requests(1))
    call MPI_Isend(v, n, MPI_DOUBLE_PRECISION, left, 1, ring, requests(2))
    call MPI_Waitall(2, requests, MPI_STATUSES_IGNORE)
    mine = v(1)
    call MPI_Allreduce(mine, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, ring)
    v = 0.5d0 * v + 0.25d0 * (from_left + from_right) + 1d-6 * total
    iter = iter + 1
    if (pause > 0) i = usleep(int(pause, c_int))
    if (rankmig_checkpoint() < 0) call fail('rankmig_checkpoint')
  end do
  comm = rankmig_comm()
  if (every) call every_call()
  if (rank == 0) then
    allocate(all(n * ranks))
  else
    allocate(all(1))
  end if
  call MPI_Gather(v, n, MPI_DOUBLE_PRECISION, all, n, MPI_DOUBLE_PRECISION, 0, comm)
  if (rank == 0) then
    total = 0d0
    do i = 1, n * ranks
      total = total + all(i)
    end do
    write (hex, '(z16.16)') transfer(total, 0_c_int64_t)
    do i = 1, 16                                  ! lower case, as the C twin
      if (hex(i:i) >= 'A' .and. hex(i:i) <= 'F') hex(i:i) = achar(iachar(hex(i:i)) + 32)
    end do
    write (*, '(a,a)') 'checksum: ', hex
    write (0, '(a,i0)') 'ring-f08: communicator generation ', rankmig_generation()
  end if
  if (rankmig_finalize() /= 0) call fail('rankmig_finalize')
  call MPI_Finalize()

contains

  !> Each counted call not made in the loop, once, with counts of its own.
  subroutine every_call()
    type(MPI_Request) :: r(2)
    real(c_double), allocatable :: a(:), b(:)
    integer, allocatable :: counts(:), displs(:), rcounts(:), rdispls(:)
    integer :: k
    allocate(a(64 * ranks + 64), b(64 * ranks + 64), counts(ranks), displs(ranks), &
         rcounts(ranks), rdispls(ranks))
    a = 1d0
    call MPI_Cart_shift(ring, 0, 1, left, right)
    call MPI_Irecv(b, 3, MPI_DOUBLE_PRECISION, left, 2, ring, r(1))
    call MPI_Ssend(a, 3, MPI_DOUBLE_PRECISION, right, 2, ring)
    call MPI_Wait(r(1), MPI_STATUS_IGNORE)
    call MPI_Irecv(b, 5, MPI_DOUBLE_PRECISION, left, 3, ring, r(1))
    call MPI_Issend(a, 5, MPI_DOUBLE_PRECISION, right, 3, ring, r(2))
    call MPI_Waitall(2, r, MPI_STATUSES_IGNORE)
    call MPI_Irecv(b, 6, MPI_DOUBLE_PRECISION, left, 4, ring, r(1))
    call MPI_Send(a, 6, MPI_DOUBLE_PRECISION, right, 4, ring)
    call MPI_Wait(r(1), MPI_STATUS_IGNORE)
    call MPI_Send_init(a, 7, MPI_DOUBLE_PRECISION, right, 5, ring, r(2))
    call MPI_Irecv(b, 7, MPI_DOUBLE_PRECISION, left, 5, ring, r(1))
    call MPI_Start(r(2))
    call MPI_Waitall(2, r, MPI_STATUSES_IGNORE)
    call MPI_Irecv(b, 7, MPI_DOUBLE_PRECISION, left, 5, ring, r(1))
    call MPI_Startall(1, r(2:2))
    call MPI_Waitall(2, r, MPI_STATUSES_IGNORE)
    call MPI_Request_free(r(2))
    b(1:9) = 2d0
    call MPI_Sendrecv_replace(b, 9, MPI_DOUBLE_PRECISION, right, 6, left, 6, ring, &
         MPI_STATUS_IGNORE)
    call MPI_Bcast(a, 11, MPI_DOUBLE_PRECISION, 0, ring)
    call MPI_Reduce(a, b, 13, MPI_DOUBLE_PRECISION, MPI_SUM, mod(1, ranks), ring)
    call MPI_Scatter(a, 2, MPI_DOUBLE_PRECISION, b, 2, MPI_DOUBLE_PRECISION, 0, ring)
    do k = 1, ranks
      counts(k) = k
      displs(k) = 16 * (k - 1)
    end do
    call MPI_Scatterv(a, counts, displs, MPI_DOUBLE_PRECISION, b, rank + 1, &
         MPI_DOUBLE_PRECISION, 0, ring)
    call MPI_Gatherv(a, rank + 1, MPI_DOUBLE_PRECISION, b, counts, displs, &
         MPI_DOUBLE_PRECISION, 0, ring)
    call MPI_Allgather(a, 3, MPI_DOUBLE_PRECISION, b, 3, MPI_DOUBLE_PRECISION, ring)
    call MPI_Allgatherv(a, rank + 1, MPI_DOUBLE_PRECISION, b, counts, displs, &
         MPI_DOUBLE_PRECISION, ring)
    call MPI_Alltoall(a, 4, MPI_DOUBLE_PRECISION, b, 4, MPI_DOUBLE_PRECISION, ring)
    do k = 1, ranks
      counts(k) = k + 1
      rcounts(k) = rank + 2
      rdispls(k) = 16 * (k - 1)
    end do
    call MPI_Alltoallv(a, counts, displs, MPI_DOUBLE_PRECISION, b, rcounts, rdispls, &
         MPI_DOUBLE_PRECISION, ring)
  end subroutine every_call

  subroutine parse_args(size, count, pause_us, every_call)
    integer, intent(out) :: size, pause_us
    logical, intent(out) :: every_call
    integer(c_int64_t), intent(out) :: count
    character(len=64) :: flag, value
    integer :: k, status
    size = 64
    count = 100
    pause_us = 0
    every_call = .false.
    k = 1
    do while (k <= command_argument_count())
      call get_command_argument(k, flag)
      if (trim(flag) == '--every-call') then
        every_call = .true.
        k = k + 1
        cycle
      end if
      call get_command_argument(k + 1, value)
      select case (trim(flag))
      case ('--size')
        read (value, *, iostat=status) size
      case ('--iters')
        read (value, *, iostat=status) count
      case ('--pause-us')
        read (value, *, iostat=status) pause_us
      case default
        status = 1
      end select
      if (status /= 0 .or. size <= 0 .or. count < 0) then
        write (0, '(a)') 'ring-f08: bad argument ' // trim(flag) // ' (use --size N --iters K)'
        call MPI_Abort(MPI_COMM_WORLD, 1)
      end if
      k = k + 2
    end do
  end subroutine parse_args

  subroutine fail(what)
    character(len=*), intent(in) :: what
    write (0, '(a)') 'ring-f08: ' // what // ': ' // rankmig_last_error()
    call MPI_Abort(MPI_COMM_WORLD, 1)
  end subroutine fail

end program ring_f08
